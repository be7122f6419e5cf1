#include "shapes/Polygon.hpp"

namespace geo {

Square::Square(double side) : Polygon<double>(4), side_(side) {}

double Square::area() const {
    return side_ * side_;
}

Square Square::unit() {
    return Square(1.0);
}

double LabelledSquare::area() const {
    return Square::area() + tag * 0.0;
}

double describe(const Shape& shape) {
    return shape.area();
}

}  // namespace geo
