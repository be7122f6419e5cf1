#pragma once

#include "shapes/Shape.hpp"

namespace geo {

template <typename T>
class Polygon : public Shape {
public:
    explicit Polygon(int sides) : Shape("polygon"), sides_(sides) {}
    int sides() const { return sides_; }
    T perimeter(T side) const { return side * sides_; }

private:
    int sides_;
};

class Square : public Polygon<double> {
public:
    explicit Square(double side);
    double area() const override;
    static Square unit();

private:
    double side_;
};

struct Tagged {
    int tag = 0;
};

class LabelledSquare final : public Square, private Tagged {
public:
    using Square::Square;
    double area() const override;
};

double describe(const Shape& shape);

}  // namespace geo
