// Job keys of the model zoo: cross-key checks (heads divide width, samples fit the position table),
// text data settings, and the device/precision enumerations.
#define BOOST_TEST_MODULE job_models
#include <boost/test/unit_test.hpp>

#include "job_testing.h"

using job_testing::expect_error;

BOOST_AUTO_TEST_CASE(model_zoo_keys_parse) {
  const dp::Job j = dp::parse_job(
      "[model]\ntype = \"gpt\"\nlayers = 2\nheads = 2\nwidth = 64\ncontext = 256\ntied_head = false\n"
      "[data]\ndataset = \"text\"\ncontext = 200\nval_fraction = 0.2\n",
      "x.toml");
  BOOST_TEST(j.model.type == dp::ModelType::gpt);
  BOOST_TEST(j.model.layers == 2);
  BOOST_TEST(j.model.width == 64);
  BOOST_TEST(!j.model.tied_head);
  BOOST_TEST(j.data.context == 200);
  BOOST_TEST(j.data.val_fraction == 0.2);
  const dp::Job c = dp::parse_job("[model]\ntype = \"cnn\"\nchannels = [8, 16, 32]\nblocks = 2\n", "x.toml");
  BOOST_TEST(c.model.channels == (std::vector<int64_t>{8, 16, 32}));
  BOOST_TEST(c.model.blocks == 2);
}

BOOST_AUTO_TEST_CASE(heads_must_divide_width) {
  expect_error("[model]\ntype = \"gpt\"\nwidth = 100\nheads = 3\n", {}, "x.toml:4:9",
               {"model.heads: must divide model.width (100), got 3", "width / heads"});
  expect_error("[model]\nheads = 0\n", {}, "x.toml:2:9", {"model.heads: must be at least 1"});
}

BOOST_AUTO_TEST_CASE(sequence_longer_than_the_position_table) {
  expect_error("[model]\ntype = \"gpt\"\ncontext = 64\n[data]\ndataset = \"text\"\ncontext = 65\n", {},
               "x.toml:6:11", {"data.context", "longer than the model's position table", "model.context"});
  // The same check through an override.
  expect_error("[model]\ntype = \"gpt\"\n", {"data.context=500"}, "--set data.context=500",
               {"position table"});
}

BOOST_AUTO_TEST_CASE(text_settings_ranges) {
  expect_error("[data]\nval_fraction = 1.0\n", {}, "x.toml:2:16", {"data.val_fraction: must be in (0, 1)"});
  expect_error("[model]\nchannels = [8, 0]\n", {}, "x.toml:2:16", {"model.channels", "at least 1"});
  expect_error("[model]\ntype = \"transformer\"\n", {}, "x.toml:2:8", {"unknown value 'transformer'", "mlp, cnn, gpt"});
}

BOOST_AUTO_TEST_CASE(device_and_precision) {
  BOOST_TEST(dp::parse_job("", "x.toml").train.device == dp::DeviceRequest::automatic);
  BOOST_TEST(dp::parse_job("[train]\ndevice = \"cpu\"\n", "x.toml").train.device == dp::DeviceRequest::cpu);
  BOOST_TEST(dp::parse_job("[train]\ndevice = \"cuda\"\nprecision = \"bf16\"\n", "x.toml").train.precision ==
             dp::Precision::bf16);
  expect_error("[train]\nprecision = \"fp16\"\n", {}, "x.toml:2:13", {"unknown value 'fp16'", "fp32, bf16"});
  expect_error("[train]\ndevice = \"gpu\"\n", {}, "x.toml:2:10", {"unknown value 'gpu'", "auto, cpu, cuda"});
}
