#pragma once

namespace settings {
constexpr bool kVerbose = true;
}
