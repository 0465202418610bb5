// Timing: see timing.h.
#include "cli/timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "cli/checks.h"

namespace gg::cli {

namespace {

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t half = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[half] : 0.5 * (samples[half - 1] + samples[half]);
}

// Owns the events of every timed run.
class EventPairs {
 public:
  explicit EventPairs(int count) : events_(2 * static_cast<size_t>(count), nullptr) {
    for (cudaEvent_t& event : events_) check_cuda(cudaEventCreate(&event), "cudaEventCreate");
  }
  ~EventPairs() {
    for (cudaEvent_t event : events_) {
      if (event != nullptr) cudaEventDestroy(event);
    }
  }
  EventPairs(const EventPairs&) = delete;
  EventPairs& operator=(const EventPairs&) = delete;

  cudaEvent_t start(int run) const { return events_[2 * static_cast<size_t>(run)]; }
  cudaEvent_t stop(int run) const { return events_[2 * static_cast<size_t>(run) + 1]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Runs the work until `ms` have passed, in batches that double until one
// takes 20 ms, so that the host's waits leave the GPU idle for a small
// fraction of the time. Returns the next run's index.
int keep_running(cudaStream_t stream, double ms, int next_run,
                 const std::function<void(int)>& run) {
  if (ms <= 0.0) return next_run;
  const auto since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  const auto start = std::chrono::steady_clock::now();
  for (int batch = 1; since(start) < ms;) {
    const auto batch_start = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) run(next_run++);
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (since(batch_start) < 20.0) batch *= 2;
  }
  return next_run;
}

}  // namespace

double median_gpu_ms(cudaStream_t stream, Repeats repeats, const std::function<void(int)>& run) {
  for (int i = 0; i < repeats.warmup; ++i) run(i);
  const int first_timed = keep_running(stream, repeats.warm_ms, repeats.warmup, run);
  EventPairs events(repeats.timed);
  for (int i = 0; i < repeats.timed; ++i) {
    check_cuda(cudaEventRecord(events.start(i), stream), "cudaEventRecord");
    run(first_timed + i);
    check_cuda(cudaEventRecord(events.stop(i), stream), "cudaEventRecord");
  }
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<double> samples(repeats.timed);
  for (int i = 0; i < repeats.timed; ++i) {
    float ms = 0.0f;
    check_cuda(cudaEventElapsedTime(&ms, events.start(i), events.stop(i)), "cudaEventElapsedTime");
    samples[i] = static_cast<double>(ms);
  }
  return median(samples);
}

double median_host_ms(Repeats repeats, const std::function<void(int)>& run) {
  for (int i = 0; i < repeats.warmup; ++i) run(i);
  std::vector<double> samples(repeats.timed);
  for (int i = 0; i < repeats.timed; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run(repeats.warmup + i);
    samples[i] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  return median(samples);
}

}  // namespace gg::cli
