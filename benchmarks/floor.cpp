// The compiled floor of the engine benchmarks (benchmarks/engine.py, benchmarks/native_peer.py):
// the workloads of benchmarks/peers.py and benchmarks/native_peer.py as a plain event loop, to say how far a Python engine is from what this
// machine does at all. Same structure as heap_mm4 / heap_tandem in benchmarks/floors.py: a
// binary heap of (time, kind, arrival time) events, FIFO queues, one sojourn kept per customer.
// Variates come from std::mt19937_64 seeded with SEED through std::exponential_distribution,
// so the sample paths differ from the Python ones; only the distributions agree.
//
//   engine-floor mm1|mm4|tandem|central N SEED
//
// N counts customers (mm1, mm4, tandem) or cycles of the closed central-server network
// (central: clients think, then use the CPU and one of two disks).
//
// prints one JSON line: wall and CPU time of build + run + mean, the mean sojourn, the number
// of customers completed, the batch-means standard error of the mean (computed after the timed
// region, as benchmarks/peers.py's batch_means_se does) and the peak RSS in KiB.

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <queue>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr double kLamMm1 = 0.8;
constexpr double kMuMm1 = 1.0;
constexpr double kLamMm4 = 3.2;
constexpr double kMuMm4 = 1.0;
constexpr int kServersMm4 = 4;
constexpr double kLamTandem = 1.0;
constexpr double kMuTandem[] = {1.25, 1.5, 2.0, 1.5, 1.25};
constexpr int kStations = sizeof(kMuTandem) / sizeof(kMuTandem[0]);
// The closed central server of native_peer.py: kClients clients think for exp(kThink), use
// the CPU (FIFO, mean kCpu), then disk 1 (probability kDisk1P, mean kDisk1) or disk 2.
constexpr int kClients = 10;
constexpr double kThink = 1.0, kCpu = 0.1, kDisk1 = 0.15, kDisk2 = 0.2, kDisk1P = 0.6;
constexpr int kArrival = -1;  // a departure's kind is the index of the station it leaves
constexpr int kBatches = 20;  // must match BATCHES in benchmarks/peers.py

struct Event {
  double t;
  int kind;
  double arrived;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.t > b.t; }
};

using Events = std::priority_queue<Event, std::vector<Event>, Later>;

std::vector<double> run_mmc(long n, std::mt19937_64& rng, double lam, double mu, int servers) {
  std::exponential_distribution<double> inter(lam), service(mu);
  Events events;
  std::deque<double> waiting;
  std::vector<double> sojourns;
  sojourns.reserve(n);
  int busy = 0;
  long to_arrive = n;
  if (n > 0) events.push({inter(rng), kArrival, 0.0});
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    if (e.kind == kArrival) {
      if (--to_arrive) events.push({e.t + inter(rng), kArrival, 0.0});
      if (busy < servers) {
        ++busy;
        events.push({e.t + service(rng), 0, e.t});
      } else {
        waiting.push_back(e.t);
      }
    } else {
      sojourns.push_back(e.t - e.arrived);
      if (!waiting.empty()) {
        events.push({e.t + service(rng), 0, waiting.front()});
        waiting.pop_front();
      } else {
        --busy;
      }
    }
  }
  return sojourns;
}

std::vector<double> run_tandem(long n, std::mt19937_64& rng) {
  std::exponential_distribution<double> inter(kLamTandem);
  std::vector<std::exponential_distribution<double>> service;
  for (double mu : kMuTandem) service.emplace_back(mu);
  Events events;
  std::vector<std::deque<double>> waiting(kStations);
  std::vector<bool> busy(kStations, false);
  std::vector<double> sojourns;
  sojourns.reserve(n);
  long to_arrive = n;
  if (n > 0) events.push({inter(rng), kArrival, 0.0});
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    const int k = e.kind;
    if (k == kArrival && --to_arrive) events.push({e.t + inter(rng), kArrival, 0.0});
    if (k == kStations - 1) {
      sojourns.push_back(e.t - e.arrived);
    } else {  // the customer moves on to the next station
      const int next = k + 1;
      const double arrived = k == kArrival ? e.t : e.arrived;
      if (busy[next]) {
        waiting[next].push_back(arrived);
      } else {
        busy[next] = true;
        events.push({e.t + service[next](rng), next, arrived});
      }
    }
    if (k != kArrival) {  // then station k takes its next customer
      if (!waiting[k].empty()) {
        events.push({e.t + service[k](rng), k, waiting[k].front()});
        waiting[k].pop_front();
      } else {
        busy[k] = false;
      }
    }
  }
  return sojourns;
}

// The closed central server: an event's kind is the station it leaves (0 think, 1 CPU, 2 and
// 3 the disks); ``arrived`` is when the cycle's think ended. N cycles are started in all.
std::vector<double> run_central(long n, std::mt19937_64& rng) {
  std::exponential_distribution<double> think(1.0 / kThink);
  std::exponential_distribution<double> service[] = {std::exponential_distribution<double>(1.0 / kThink),
                                                     std::exponential_distribution<double>(1.0 / kCpu),
                                                     std::exponential_distribution<double>(1.0 / kDisk1),
                                                     std::exponential_distribution<double>(1.0 / kDisk2)};
  std::bernoulli_distribution to_disk1(kDisk1P);
  Events events;
  std::deque<double> waiting[4];
  bool busy[4] = {false, false, false, false};
  std::vector<double> sojourns;
  sojourns.reserve(n);
  long to_start = n;
  auto enter = [&](int station, double t, double arrived) {
    if (busy[station]) {
      waiting[station].push_back(arrived);
    } else {
      busy[station] = true;
      events.push({t + service[station](rng), station, arrived});
    }
  };
  for (int c = 0; c < kClients && to_start > 0; ++c, --to_start) events.push({think(rng), 0, 0.0});
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    const int k = e.kind;
    if (k == 0) {  // thinking is a delay: no queue, the cycle starts now
      enter(1, e.t, e.t);
      continue;
    }
    if (k == 1) {
      enter(to_disk1(rng) ? 2 : 3, e.t, e.arrived);
    } else {
      sojourns.push_back(e.t - e.arrived);
      if (to_start > 0) {
        --to_start;
        events.push({e.t + think(rng), 0, 0.0});
      }
    }
    if (!waiting[k].empty()) {
      events.push({e.t + service[k](rng), k, waiting[k].front()});
      waiting[k].pop_front();
    } else {
      busy[k] = false;
    }
  }
  return sojourns;
}

// Standard error of the mean from kBatches equal batches of the last kBatches * (n / kBatches)
// sojourns (the first few, the most transient, are dropped); NaN when too few.
double batch_means_se(const std::vector<double>& x) {
  const std::size_t size = x.size() / kBatches;
  if (size < 2) return NAN;
  const std::size_t start = x.size() - size * kBatches;
  std::vector<double> means(kBatches, 0.0);
  double grand = 0.0;
  for (int b = 0; b < kBatches; ++b) {
    double s = 0.0;
    for (std::size_t i = start + b * size; i < start + (b + 1) * size; ++i) s += x[i];
    means[b] = s / size;
    grand += means[b];
  }
  grand /= kBatches;
  double ss = 0.0;
  for (double m : means) ss += (m - grand) * (m - grand);
  return std::sqrt(ss / (kBatches - 1) / kBatches);
}

// This program's own peak RSS: VmHWM, the high-water mark of its address space. ru_maxrss
// would also count the spawning Python process (its pages are this process's until exec).
long maxrss_kib() {
  if (std::FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long kib = -1;
    while (std::fgets(line, sizeof line, status)) {
      if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    }
    std::fclose(status);
    if (kib >= 0) return kib;
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

void print_number(const char* key, double value) {
  if (std::isfinite(value)) {
    std::printf("\"%s\": %.17g, ", key, value);
  } else {
    std::printf("\"%s\": null, ", key);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s mm1|mm4|tandem|central N SEED\n", argv[0]);
    return 2;
  }
  const std::string workload = argv[1];
  if (workload != "mm1" && workload != "mm4" && workload != "tandem" && workload != "central") {
    std::fprintf(stderr, "unknown workload '%s'; choose mm1, mm4, tandem or central\n", argv[1]);
    return 2;
  }
  const long n = std::atol(argv[2]);
  const unsigned long long seed = std::strtoull(argv[3], nullptr, 10);
  if (n < 1) {
    std::fprintf(stderr, "N must be >= 1, got '%s'\n", argv[2]);
    return 2;
  }
  const long idle_kib = maxrss_kib();

  const std::clock_t c0 = std::clock();
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937_64 rng(seed);
  const std::vector<double> sojourns = workload == "mm1"   ? run_mmc(n, rng, kLamMm1, kMuMm1, 1)
                                       : workload == "mm4" ? run_mmc(n, rng, kLamMm4, kMuMm4, kServersMm4)
                                       : workload == "tandem" ? run_tandem(n, rng)
                                                              : run_central(n, rng);
  double sum = 0.0;
  for (double s : sojourns) sum += s;
  const double mean = sum / sojourns.size();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const long peak_kib = maxrss_kib();

  std::printf("{\"engine\": \"cpp\", \"workload\": \"%s\", \"n\": %ld, \"seed\": %llu, \"status\": \"ok\", ",
              workload.c_str(), n, seed);
  print_number("wall_s", wall);
  print_number("cpu_s", cpu);
  print_number("mean", mean);
  print_number("se", batch_means_se(sojourns));
  std::printf("\"completed\": %zu, \"idle_maxrss_kib\": %ld, \"maxrss_kib\": %ld}\n", sojourns.size(), idle_kib,
              peak_kib);
  return 0;
}
