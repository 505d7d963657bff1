#include "detectors/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "detectors/statistics.hpp"

namespace kernelwatch::detectors {
namespace {

// Samples a side keeps for the pairwise differences (1,000 x 1,000 = 10^6 differences).
constexpr std::size_t kMaxSamples = 1000;
// Up to this many samples a side the Mann-Whitney null distribution is computed exactly.
constexpr std::int64_t kExactLimit = 50;
// sigma of a normal's log from its quantiles: z(0.8) - z(0.2) and z(0.75) - z(0.25).
constexpr double kP20P80Width = 1.6832;
constexpr double kQuartileWidth = 1.3490;
// The standard error of a median is sqrt(pi / 2) times that of a mean.
constexpr double kMedianEfficiency = 1.2533;

// The null distribution of U for sizes n and m: the coefficients of the Gaussian binomial
// [n+m choose n]_q, built as prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i). Exact integers while they
// fit a double's 53 bits; beyond (C(100, 50) is about 1e29) the lower tail, which is all an
// interval reads, stays accurate to about 1e-13 and the upper half is taken from it by symmetry.
std::vector<double> exact_u_cdf(std::int64_t n, std::int64_t m) {
  const auto size = static_cast<std::size_t>(n * m + 1);
  std::vector<double> c(size, 0.0);
  c[0] = 1.0;
  for (std::int64_t i = 1; i <= n; ++i) {
    const auto up = static_cast<std::size_t>(m + i);
    for (std::size_t u = size; u-- > up;) c[u] -= c[u - up];
    const auto down = static_cast<std::size_t>(i);
    for (std::size_t u = down; u < size; ++u) c[u] += c[u - down];
  }
  for (std::size_t u = 0; u < size / 2; ++u) c[size - 1 - u] = c[u];  // c[u] = c[nm - u]
  double total = 0;
  for (const double v : c) total += v;
  double running = 0;
  for (double& v : c) {
    running += v;
    v = std::clamp(running / total, 0.0, 1.0);
  }
  return c;
}

std::vector<double> thinned_logs(std::span<const double> values) {
  std::vector<double> logs;
  logs.reserve(values.size());
  for (const double v : values) logs.push_back(std::log(v));
  std::sort(logs.begin(), logs.end());
  if (logs.size() <= kMaxSamples) return logs;
  std::vector<double> thin;
  thin.reserve(kMaxSamples);
  const double last = static_cast<double>(logs.size() - 1);
  for (std::size_t i = 0; i < kMaxSamples; ++i) {
    // Type 7 on the sorted values, read directly (quantile() would copy and sort each time).
    const double at = (static_cast<double>(i) + 0.5) / kMaxSamples * last;
    const auto below = static_cast<std::size_t>(at);
    const double fraction = at - static_cast<double>(below);
    const std::size_t above = std::min(below + 1, logs.size() - 1);
    thin.push_back(logs[below] + fraction * (logs[above] - logs[below]));
  }
  return thin;
}

// sigma of a side's log times, from the best spread it gives.
std::optional<double> log_sigma(const CaseTimes& t) {
  // A spread of zero (p20 == p80 from a coarse timer) is no evidence of precision: not a spread.
  if (t.p20_ns && t.p80_ns && *t.p20_ns > 0 && *t.p80_ns > *t.p20_ns) {
    return (std::log(*t.p80_ns) - std::log(*t.p20_ns)) / kP20P80Width;
  }
  if (t.q1_ns && t.q3_ns && *t.q1_ns > 0 && *t.q3_ns > *t.q1_ns) {
    return (std::log(*t.q3_ns) - std::log(*t.q1_ns)) / kQuartileWidth;
  }
  if (t.stddev_ns && *t.stddev_ns > 0) {
    const double centre = t.mean_ns.value_or(t.median_ns);
    if (centre > 0) {
      const double cv = *t.stddev_ns / centre;
      return std::sqrt(std::log1p(cv * cv));
    }
  }
  return std::nullopt;
}

Comparison decide(Comparison c, double estimate, std::optional<double> lo, std::optional<double> hi,
                  const CompareOptions& options) {
  c.change = std::expm1(estimate);
  const double limit = std::log1p(options.threshold);
  const std::string at = " at " + plain_percent(options.confidence);
  const std::string threshold = plain_percent(options.threshold);
  if (!lo || !hi) {
    c.verdict = CompareVerdict::Ambiguous;
    return c;
  }
  c.low = std::expm1(*lo);
  c.high = std::expm1(*hi);
  const std::string shown = signed_percent(c.change) + " [" + signed_percent(*c.low) + ", " +
                            signed_percent(*c.high) + "]" + at;
  if (estimate >= limit && *lo > 0) {
    c.verdict = CompareVerdict::Slower;
    c.reason = shown + ": slower by more than the " + threshold + " threshold";
  } else if (estimate <= -limit && *hi < 0) {
    c.verdict = CompareVerdict::Faster;
    c.reason = shown + ": faster by more than the " + threshold + " threshold";
  } else if (*lo >= -limit && *hi <= limit) {
    c.verdict = CompareVerdict::Same;
    c.reason = shown + ": within +-" + threshold;
  } else {
    c.verdict = CompareVerdict::Ambiguous;
    c.reason =
        shown + (std::abs(estimate) >= limit ? ": the change is past the " + threshold +
                                                   " threshold but the interval includes no change"
                                             : ": the interval reaches past the " + threshold +
                                                   " threshold; more repetitions would tell");
  }
  return c;
}

std::string count_text(std::int64_t count, const char* what) {
  return std::to_string(count) + " " + what + (count == 1 ? "" : "s");
}

}  // namespace

std::string signed_percent(double ratio_minus_one) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", ratio_minus_one * 100.0);
  return buffer;
}

std::string plain_percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g%%", fraction * 100.0);
  return buffer;
}

std::string_view to_string(CompareVerdict verdict) noexcept {
  switch (verdict) {
    case CompareVerdict::Same:
      return "same";
    case CompareVerdict::Faster:
      return "faster";
    case CompareVerdict::Slower:
      return "slower";
    case CompareVerdict::Ambiguous:
      return "ambiguous";
  }
  return "?";
}

std::string_view to_string(CompareMethod method) noexcept {
  switch (method) {
    case CompareMethod::Samples:
      return "samples";
    case CompareMethod::Quantiles:
      return "quantiles";
    case CompareMethod::Rounds:
      return "rounds";
    case CompareMethod::Band:
      return "band";
    case CompareMethod::None:
      return "none";
  }
  return "?";
}

double mann_whitney_cdf(std::int64_t u, std::int64_t n, std::int64_t m) {
  if (n <= 0 || m <= 0) return u < 0 ? 0.0 : 1.0;
  if (u < 0) return 0.0;
  if (u >= n * m) return 1.0;
  if (n <= kExactLimit && m <= kExactLimit) {
    return exact_u_cdf(n, m)[static_cast<std::size_t>(u)];
  }
  const double nm = static_cast<double>(n) * static_cast<double>(m);
  const double sd = std::sqrt(nm * static_cast<double>(n + m + 1) / 12.0);
  return normal_cdf((static_cast<double>(u) + 0.5 - nm / 2.0) / sd);
}

ShiftInterval log_shift_interval(std::span<const double> baseline,
                                 std::span<const double> candidate, double confidence) {
  const std::vector<double> x = thinned_logs(baseline);
  const std::vector<double> y = thinned_logs(candidate);
  ShiftInterval out;
  if (x.empty() || y.empty()) return out;
  std::vector<double> d;
  d.reserve(x.size() * y.size());
  for (const double b : x) {
    for (const double c : y) d.push_back(c - b);
  }
  const auto n = static_cast<std::int64_t>(x.size());
  const auto m = static_cast<std::int64_t>(y.size());
  const std::int64_t total = n * m;
  const auto order = [&](std::int64_t rank) {  // 1-based order statistic of d
    auto it = d.begin() + (rank - 1);
    std::nth_element(d.begin(), it, d.end());
    return *it;
  };
  out.estimate =
      total % 2 == 1 ? order(total / 2 + 1) : 0.5 * (order(total / 2) + order(total / 2 + 1));
  // The largest k with P(U <= k - 1) <= alpha / 2: [d_(k), d_(nm + 1 - k)] covers the shift with
  // probability at least the confidence.
  const double tail = (1.0 - confidence) / 2.0;
  std::int64_t k = 0;
  if (n <= kExactLimit && m <= kExactLimit) {
    const std::vector<double> cdf = exact_u_cdf(n, m);
    while (k < total / 2 && cdf[static_cast<std::size_t>(k)] <= tail) ++k;
  } else {
    const double nm = static_cast<double>(total);
    const double sd = std::sqrt(nm * static_cast<double>(n + m + 1) / 12.0);
    k = static_cast<std::int64_t>(std::floor(nm / 2.0 - normal_quantile(1.0 - tail) * sd + 0.5));
    k = std::clamp<std::int64_t>(k, 0, total / 2);
  }
  if (k >= 1) {
    out.low = order(k);
    out.high = order(total + 1 - k);
  }
  return out;
}

Comparison compare_times(const CaseTimes& baseline, const CaseTimes& candidate,
                         const CompareOptions& options) {
  Comparison c;
  if (baseline.samples_ns.size() >= 2 && candidate.samples_ns.size() >= 2) {
    c.method = CompareMethod::Samples;
    c.base_count = static_cast<std::int64_t>(baseline.samples_ns.size());
    c.candidate_count = static_cast<std::int64_t>(candidate.samples_ns.size());
    const ShiftInterval s =
        log_shift_interval(baseline.samples_ns, candidate.samples_ns, options.confidence);
    c = decide(std::move(c), s.estimate, s.low, s.high, options);
    if (!s.low) {
      c.reason = signed_percent(c.change) + " from " + count_text(c.base_count, "sample") +
                 " and " + count_text(c.candidate_count, "sample") + ": too few for a " +
                 plain_percent(options.confidence) + " interval; run more repetitions";
    }
    return c;
  }
  const auto sb = log_sigma(baseline);
  const auto sc = log_sigma(candidate);
  c.base_count = baseline.count;
  c.candidate_count = candidate.count;
  const double estimate = std::log(candidate.median_ns) - std::log(baseline.median_ns);
  if (!sb || !sc) {
    c.method = CompareMethod::None;
    c = decide(std::move(c), estimate, std::nullopt, std::nullopt, options);
    const char* side = !sb && !sc ? "neither side gives" : !sb ? "the baseline gives no" : nullptr;
    c.reason = signed_percent(c.change) + ": too little data, " +
               (side != nullptr ? std::string(side) : std::string("the candidate gives no")) +
               " spread (one time per case: run with repetitions, e.g. "
               "--benchmark_repetitions=10)";
    return c;
  }
  c.method = CompareMethod::Quantiles;
  const auto se = [](double sigma, std::int64_t count) {
    return kMedianEfficiency * sigma /
           std::sqrt(static_cast<double>(std::max<std::int64_t>(1, count)));
  };
  const double s = std::hypot(se(*sb, baseline.count), se(*sc, candidate.count));
  const double z = normal_quantile(1.0 - (1.0 - options.confidence) / 2.0);
  return decide(std::move(c), estimate, estimate - z * s, estimate + z * s, options);
}

namespace {

// P(W+ <= w) for w = 0..n(n+1)/2: subsets of {1..n} by their sum, built one rank at a time
// (exact: the counts stay below 2^50 up to 50 pairs).
std::vector<double> exact_signed_rank_cdf(std::int64_t n) {
  const std::int64_t top = n * (n + 1) / 2;
  std::vector<double> counts(static_cast<std::size_t>(top + 1), 0.0);
  counts[0] = 1.0;
  for (std::int64_t r = 1; r <= n; ++r) {
    for (std::int64_t s = top; s >= r; --s) {
      counts[static_cast<std::size_t>(s)] += counts[static_cast<std::size_t>(s - r)];
    }
  }
  const double all = std::ldexp(1.0, static_cast<int>(n));
  double below = 0;
  for (double& c : counts) {
    below += c;
    c = std::min(1.0, below / all);
  }
  return counts;
}

double normal_signed_rank_cdf(std::int64_t w, std::int64_t n) {
  const double mean = static_cast<double>(n * (n + 1)) / 4.0;
  const double sd = std::sqrt(static_cast<double>(n * (n + 1) * (2 * n + 1)) / 24.0);
  return normal_cdf((static_cast<double>(w) + 0.5 - mean) / sd);
}

}  // namespace

double signed_rank_cdf(std::int64_t w, std::int64_t n) {
  if (w < 0) return 0.0;
  if (w >= n * (n + 1) / 2) return 1.0;
  if (n <= kExactLimit) return exact_signed_rank_cdf(n)[static_cast<std::size_t>(w)];
  return normal_signed_rank_cdf(w, n);
}

Comparison compare_rounds(std::span<const double> baseline, std::span<const double> candidate,
                          const CompareOptions& options) {
  Comparison c;
  c.method = CompareMethod::Rounds;
  const std::size_t n = std::min(baseline.size(), candidate.size());
  std::vector<double> d;
  for (std::size_t i = 0; i < n; ++i) {
    if (baseline[i] > 0 && candidate[i] > 0) d.push_back(std::log(candidate[i] / baseline[i]));
  }
  c.base_count = static_cast<std::int64_t>(d.size());
  c.candidate_count = c.base_count;
  if (d.empty()) {
    c.reason = "no round timed both sides";
    return c;
  }
  const auto rounds = static_cast<std::int64_t>(d.size());
  const double tail = (1.0 - options.confidence) / 2.0;
  // Enough rounds for the signed-rank interval: the Hodges-Lehmann estimate (the median of the
  // Walsh averages) between the order statistics the signed-rank null gives; one disturbed
  // round moves it little. Fewer: the t interval of the mean.
  if (signed_rank_cdf(0, rounds) <= tail) {
    std::vector<double> walsh;
    for (std::size_t i = 0; i < d.size(); ++i) {
      for (std::size_t j = i; j < d.size(); ++j) walsh.push_back(0.5 * (d[i] + d[j]));
    }
    std::sort(walsh.begin(), walsh.end());
    const auto total = static_cast<std::int64_t>(walsh.size());
    std::int64_t k = 0;
    const std::vector<double> exact =
        rounds <= kExactLimit ? exact_signed_rank_cdf(rounds) : std::vector<double>();
    const auto cdf = [&](std::int64_t w) {
      return exact.empty() ? normal_signed_rank_cdf(w, rounds) : exact[static_cast<std::size_t>(w)];
    };
    while (k < total / 2 && cdf(k) <= tail) ++k;
    const double estimate = quantile(walsh, 0.5);
    return decide(std::move(c), estimate, walsh[static_cast<std::size_t>(k - 1)],
                  walsh[static_cast<std::size_t>(total - k)], options);
  }
  double mean = 0;
  for (const double v : d) mean += v;
  mean /= static_cast<double>(d.size());
  if (d.size() < 2) {
    c = decide(std::move(c), mean, std::nullopt, std::nullopt, options);
    c.reason = signed_percent(c.change) + " from one round: too few for an interval (2 at least)";
    return c;
  }
  double ss = 0;
  for (const double v : d) ss += (v - mean) * (v - mean);
  const double df = static_cast<double>(d.size() - 1);
  const double half =
      student_t_quantile(1.0 - tail, df) * std::sqrt(ss / df / static_cast<double>(d.size()));
  return decide(std::move(c), mean, mean - half, mean + half, options);
}

}  // namespace kernelwatch::detectors
