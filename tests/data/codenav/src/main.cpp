#include <iostream>

#include "config.hpp"
#include "shapes/Polygon.hpp"
#include "shapes/Registry.hpp"

using namespace geo;

int main() {
    Registry registry;
    Square square(2.0);
    Square unit = Square::unit();
    registry.add(&square);
    registry.add(&unit);
    std::cout << describe(square) << " " << registry.totalArea() << std::endl;
    return settings::kVerbose ? 0 : 1;
}
