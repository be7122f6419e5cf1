#pragma once

// The base of every shape. Shape.hpp and Registry.hpp include each other:
// an include cycle the graph must report.
#include <string>

#include "shapes/Registry.hpp"

namespace geo {

class Shape {
public:
    explicit Shape(std::string name);
    virtual ~Shape() = default;

    virtual double area() const = 0;
    const std::string& name() const { return name_; }

protected:
    void rename(const std::string& newName);

private:
    std::string name_;
};

}  // namespace geo
