#include "shapes/Registry.hpp"

namespace geo {

void Registry::add(Shape* shape) {
    items_.push_back(shape);
}

double Registry::totalArea() const {
    double sum = 0;
    for (const Shape* s : items_) {
        sum += s->area();
    }
    return sum;
}

}  // namespace geo
