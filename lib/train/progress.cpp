// Progress bar and plain progress lines.
#include "lib/train/progress.h"

#include <unistd.h>

#include <fmt/format.h>

namespace dp {

static std::string clock_text(double seconds) {
  const auto s = int64_t(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60)
                   : fmt::format("{}:{:02d}", s / 60, s % 60);
}

Progress::Progress(std::FILE* out, ProgressMode mode, int64_t total_steps, int64_t every)
    : out_(out),
      bar_(mode == ProgressMode::bar || (mode == ProgressMode::automatic && ::isatty(::fileno(out)))),
      quiet_(mode == ProgressMode::none),
      total_(total_steps),
      every_(every) {}

void Progress::step(int64_t step, int64_t epoch, double loss, double sps, double step_seconds) {
  if (quiet_) return;
  smoothed_sps_ = smoothed_sps_ == 0 ? sps : 0.9 * smoothed_sps_ + 0.1 * sps;
  smoothed_step_s_ = smoothed_step_s_ == 0 ? step_seconds : 0.9 * smoothed_step_s_ + 0.1 * step_seconds;
  if (!bar_) {
    if (step % every_ == 0 || step == total_)
      fmt::print(out_, "step {}/{} epoch {} loss {:.4f} {:.0f} samples/s\n", step, total_, epoch, loss, sps);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (step != total_ && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const int filled = int(kWidth * step / std::max<int64_t>(1, total_));
  const double eta = double(total_ - step) * smoothed_step_s_;
  fmt::print(out_, "\r\033[Kepoch {} step {}/{} [{}{}] loss {:.4f} {:.0f} samples/s ETA {}", epoch, step,
             total_, std::string(size_t(filled), '='), std::string(size_t(kWidth - filled), ' '), loss,
             smoothed_sps_, clock_text(eta));
  std::fflush(out_);
}

void Progress::note(const std::string& line) {
  if (quiet_) return;
  if (bar_ && drawn_) fmt::print(out_, "\r\033[K");
  fmt::print(out_, "{}\n", line);
  drawn_ = false;
}

void Progress::finish() {
  if (bar_ && drawn_) fmt::print(out_, "\n");
  std::fflush(out_);
}

}  // namespace dp
