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

}  // namespace

double median_gpu_ms(cudaStream_t stream, Repeats repeats, const std::function<void(int)>& run) {
  for (int i = 0; i < repeats.warmup; ++i) run(i);
  EventPairs events(repeats.timed);
  for (int i = 0; i < repeats.timed; ++i) {
    check_cuda(cudaEventRecord(events.start(i), stream), "cudaEventRecord");
    run(repeats.warmup + i);
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
