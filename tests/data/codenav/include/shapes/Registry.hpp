#pragma once

#include <vector>

#include "shapes/Shape.hpp"

namespace geo {

class Shape;

/* Keeps shapes it does not own. */
class Registry {
public:
    void add(Shape* shape);
    double totalArea() const;

private:
    std::vector<Shape*> items_;
};

}  // namespace geo
