#include "shapes/Shape.hpp"

#include <utility>

namespace geo {

Shape::Shape(std::string name) : name_(std::move(name)) {}

void Shape::rename(const std::string& newName) {
    name_ = newName;
}

}  // namespace geo
