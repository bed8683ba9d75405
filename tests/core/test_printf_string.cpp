// printf_string: the bytes printf would print, short and long (past any small buffer), with the
// conversions the plan tables use.
#define BOOST_TEST_MODULE printf_string
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>

#include "lib/core/printf_string.h"

BOOST_AUTO_TEST_CASE(as_printf_formats) {
  BOOST_TEST(dp::printf_string("%s|%5zu|%-6s|%8.3f|%.4g|%g|%lld|%9.1f%%", "a", size_t(42), "ab", 3.14159, 0.000123456,
                               2.5, -7LL, 12.25) == "a|   42|ab    |   3.142|0.0001235|2.5|-7|     12.2%");
  BOOST_TEST(dp::printf_string("%s", "").empty());
}

BOOST_AUTO_TEST_CASE(long_output) {
  const std::string big(5000, 'x');
  const std::string s = dp::printf_string("<%s>%d", big.c_str(), 7);
  BOOST_TEST(s.size() == 5003u);
  BOOST_TEST(s == "<" + big + ">7");
}
