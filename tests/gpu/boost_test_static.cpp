// Device build only (cmake/Device.cmake): the Boost.Test framework compiled into the GPU test binaries, so
// that they need no libboost_unit_test_framework.so on the GPU machine. (The static archive cannot be
// used instead: its unit_test_main.o also defines main(), which clashes with the tests' own main that
// exits 77 without a GPU.) Must agree with tests/gpu/gpu_testing.h on the init API.
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#include <boost/test/included/unit_test.hpp>
