// Streams the job's enums by name ("pipeline"), for Boost.Test's messages when compared values differ and
// for any log that writes to a std::ostream. Apart from job_enums.h so that <ostream> stays out of the
// many files that include job.h.
#pragma once

#include <ostream>

#include "lib/job/job_enums.h"

namespace dp {

template <class E>
  requires requires { EnumNames<E>::names; }
std::ostream& operator<<(std::ostream& out, E value) {
  return out << EnumNames<E>::names[static_cast<std::size_t>(value)];
}

}  // namespace dp
