// Deterministic random numbers, identical on every platform and rank count. The standard library's
// distributions are implementation-defined, so dptrain draws from its own: SplitMix64 for seeding,
// xoshiro256** for streams, Box-Muller for normals, Fisher-Yates for permutations.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace dp {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Mixes a seed with stream identifiers (epoch, layer index, ...) into an independent seed.
inline uint64_t derive_seed(uint64_t seed, uint64_t a, uint64_t b = 0) {
  uint64_t s = seed ^ (a * 0xD1B54A32D192ED03ull) ^ (b * 0x8CB92BA72F3D8DD7ull);
  return splitmix64(s);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), without modulo bias (Lemire).
  uint64_t below(uint64_t n) {
    __uint128_t m = __uint128_t(next()) * n;
    uint64_t low = uint64_t(m);
    if (low < n) {
      const uint64_t threshold = -n % n;
      while (low < threshold) {
        m = __uint128_t(next()) * n;
        low = uint64_t(m);
      }
    }
    return uint64_t(m >> 64);
  }
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// A uniformly random permutation of 0..n-1 drawn from `seed` (Fisher-Yates).
inline std::vector<uint32_t> random_permutation(uint32_t n, uint64_t seed) {
  std::vector<uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0u);
  Rng rng(seed);
  for (uint32_t i = n; i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
  return p;
}

}  // namespace dp
