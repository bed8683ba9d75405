// Optimizer steps against hand-computed values, and the learning-rate schedules.
#define BOOST_TEST_MODULE optimizer
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "lib/core/error.h"
#include "lib/optim/optimizer.h"

namespace tt = boost::test_tools;

BOOST_AUTO_TEST_CASE(sgd_momentum_two_steps) {
  dp::OptimSection s;
  s.name = dp::OptimizerKind::sgd;
  s.momentum = 0.9;
  auto opt = dp::make_optimizer(s, 1);
  std::vector<float> p{1.0f}, g{0.5f};
  opt->step(p, g, 0.1);  // v = 0.5, p = 1 - 0.05
  BOOST_TEST(p[0] == 0.95f, tt::tolerance(1e-6f));
  opt->step(p, g, 0.1);  // v = 0.9*0.5 + 0.5 = 0.95, p = 0.95 - 0.095
  BOOST_TEST(p[0] == 0.855f, tt::tolerance(1e-6f));
  BOOST_TEST(opt->state()[0] == 0.95f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(sgd_weight_decay_adds_l2_to_the_gradient) {
  dp::OptimSection s;
  s.name = dp::OptimizerKind::sgd;
  s.momentum = 0.0;
  s.weight_decay = 0.1;
  auto opt = dp::make_optimizer(s, 1);
  std::vector<float> p{2.0f}, g{0.0f};
  opt->step(p, g, 0.5);  // grad = 0 + 0.1*2 = 0.2; p = 2 - 0.1
  BOOST_TEST(p[0] == 1.9f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(adamw_two_steps) {
  dp::OptimSection s;
  s.name = dp::OptimizerKind::adamw;
  s.beta1 = 0.9;
  s.beta2 = 0.999;
  s.eps = 1e-8;
  s.weight_decay = 0.01;
  auto opt = dp::make_optimizer(s, 1);
  std::vector<float> p{1.0f}, g{0.5f};
  // Step 1: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25, mhat/sqrt(vhat) = 1:
  // p = 1 - 0.1 * (1 + 0.01 * 1) = 0.899
  opt->step(p, g, 0.1);
  BOOST_TEST(p[0] == 0.899f, tt::tolerance(1e-5f));
  // Step 2 with g = -0.25: m = 0.045 - 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225,
  // mhat = 0.02 / 0.19, vhat = 0.00031225 / 0.001999, p = 0.899 - 0.1 * (mhat / sqrt(vhat) + 0.01 * 0.899)
  g[0] = -0.25f;
  opt->step(p, g, 0.1);
  const double mhat = 0.02 / 0.19, vhat = 0.00031225 / 0.001999;
  const double expected = 0.899 - 0.1 * (mhat / std::sqrt(vhat) + 0.01 * 0.899);
  BOOST_TEST(p[0] == float(expected), tt::tolerance(1e-5f));
  BOOST_TEST(opt->steps_taken() == 2);
  BOOST_TEST(opt->state().size() == 2u);  // m and v
}

BOOST_AUTO_TEST_CASE(warmup_then_constant) {
  dp::OptimSection s;
  s.lr = 0.4;
  s.warmup_steps = 4;
  BOOST_TEST(dp::learning_rate(s, 0, 100) == 0.1, tt::tolerance(1e-12));
  BOOST_TEST(dp::learning_rate(s, 3, 100) == 0.4, tt::tolerance(1e-12));
  BOOST_TEST(dp::learning_rate(s, 50, 100) == 0.4, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(step_decay) {
  dp::OptimSection s;
  s.schedule = dp::LrSchedule::step;
  s.lr = 1.0;
  s.step_size = 10;
  s.gamma = 0.5;
  BOOST_TEST(dp::learning_rate(s, 9, 100) == 1.0, tt::tolerance(1e-12));
  BOOST_TEST(dp::learning_rate(s, 10, 100) == 0.5, tt::tolerance(1e-12));
  BOOST_TEST(dp::learning_rate(s, 25, 100) == 0.25, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(cosine_decay_after_warmup) {
  dp::OptimSection s;
  s.schedule = dp::LrSchedule::cosine;
  s.lr = 1.0;
  s.min_lr = 0.1;
  s.warmup_steps = 10;
  BOOST_TEST(dp::learning_rate(s, 10, 110) == 1.0, tt::tolerance(1e-12));   // start of decay
  BOOST_TEST(dp::learning_rate(s, 60, 110) == 0.55, tt::tolerance(1e-12));  // half way: (1 + 0.1) / 2
  BOOST_TEST(dp::learning_rate(s, 110, 110) == 0.1, tt::tolerance(1e-12));  // floor
}
