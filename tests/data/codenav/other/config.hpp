#pragma once

// Another config.hpp: with two files of that name, only [code] include_dirs
// tells which one main.cpp means.
namespace other {
constexpr int kLevel = 2;
}
