// The monitor's three outputs, each drawn from a Snapshot (pure): the text view (a terminal screen, or
// --once's plain snapshot), one JSON object (--json) and an SVG of the curves over time (--plot).
#pragma once

#include <string>

#include "lib/monitor/snapshot.h"

namespace dp::monitor {

// Lines of at most about `width` columns (the rank table and the slow-rank line may be longer).
std::string text_view(const Snapshot& s, int width);
std::string json_view(const Snapshot& s);
// Loss, throughput (samples/s) and every rank's wait (ms per logged step) against seconds since the start.
std::string svg_plot(const Snapshot& s);

// A language model's evaluation as perplexity: the line's, else exp of its loss per token.
double perplexity(const EvalPoint& e);
// "1h02m", "3m05s", "12s" (and "-" for a negative number of seconds: unknown).
std::string duration_text(double seconds);
// "812 B", "1.5 MB", "2.1 GB" (and "-" for negative: not measured).
std::string bytes_text(double bytes);

}  // namespace dp::monitor
