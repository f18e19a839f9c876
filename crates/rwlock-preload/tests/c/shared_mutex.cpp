// std::shared_mutex and std::shared_timed_mutex (both on pthread_rwlock_t
// in libstdc++: lock_shared is pthread_rwlock_rdlock, try_lock_shared_until
// on steady_clock is pthread_rwlock_clockrdlock, on system_clock
// pthread_rwlock_timedrdlock) from many threads, with the reader-writer
// invariant checked; run under LD_PRELOAD with each RWLOCK_IMPL by
// tests/preload.rs.
//
//   shared_mutex THREADS MILLISECONDS
//
// Prints "shared_mutex: ok ..." and exits 0, or the violation and exits 1.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void fail(const char *what, int i) {
    std::fprintf(stderr, "shared_mutex: FAIL lock %d: %s\n", i, what);
    std::exit(1);
}

template <class M> struct Guarded {
    M m;
    std::atomic<int> readers{0}, writers{0};
    long a = 0, b = 0;
    std::atomic<long> writes{0};

    void read_section(int i) {
        readers.fetch_add(1);
        if (writers.load() != 0) fail("a reader inside with a writer", i);
        if (*static_cast<volatile long *>(&a) != *static_cast<volatile long *>(&b)) fail("a reader saw a != b", i);
        readers.fetch_sub(1);
    }

    void write_section(int i) {
        if (writers.exchange(1) != 0) fail("two writers inside", i);
        if (readers.load() != 0) fail("a writer inside with readers", i);
        a++;
        b++;
        writes.fetch_add(1);
        writers.store(0);
    }
};

// Static objects: libstdc++ initialises them with PTHREAD_RWLOCK_INITIALIZER.
Guarded<std::shared_mutex> plain[4];
Guarded<std::shared_timed_mutex> timed[4];
std::atomic<bool> stop{false};

struct Counts {
    long reads = 0, writes = 0, busy = 0, timeouts = 0;
};

void worker(unsigned seed, Counts *c) {
    using namespace std::chrono;
    unsigned long x = seed * 2654435761u + 1;
    while (!stop.load(std::memory_order_relaxed)) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int i = static_cast<int>(x % 4), form = static_cast<int>((x >> 8) % 4), op = static_cast<int>((x >> 16) % 100);
        bool write = op >= 80;
        if ((x >> 24) % 2 == 0) {
            auto &g = plain[i];
            if (write) {
                if (form == 0) {
                    if (!g.m.try_lock()) { c->busy++; continue; }
                } else {
                    g.m.lock();
                }
                g.write_section(i);
                g.m.unlock();
                c->writes++;
            } else {
                if (form == 0) {
                    if (!g.m.try_lock_shared()) { c->busy++; continue; }
                } else {
                    g.m.lock_shared();
                }
                g.read_section(i);
                g.m.unlock_shared();
                c->reads++;
            }
        } else {
            auto &g = timed[i];
            bool got;
            if (write) {
                switch (form) {
                case 0: got = g.m.try_lock_for(microseconds(500)); break;
                case 1: got = g.m.try_lock_until(system_clock::now() + microseconds(500)); break;
                case 2: got = g.m.try_lock_until(steady_clock::now() + microseconds(500)); break;
                default: g.m.lock(); got = true; break;
                }
                if (!got) { c->timeouts++; continue; }
                g.write_section(i);
                g.m.unlock();
                c->writes++;
            } else {
                switch (form) {
                case 0: got = g.m.try_lock_shared_for(microseconds(500)); break;
                case 1: got = g.m.try_lock_shared_until(system_clock::now() + microseconds(500)); break;
                case 2: got = g.m.try_lock_shared_until(steady_clock::now() + microseconds(500)); break;
                default: {
                    std::shared_lock<std::shared_timed_mutex> lk(g.m);
                    g.read_section(i);
                    c->reads++;
                    continue;
                }
                }
                if (!got) { c->timeouts++; continue; }
                g.read_section(i);
                g.m.unlock_shared();
                c->reads++;
            }
        }
    }
}

}  // namespace

int main(int argc, char **argv) {
    int threads = argc > 1 ? std::atoi(argv[1]) : 4;
    int ms = argc > 2 ? std::atoi(argv[2]) : 300;
    if (threads < 1 || ms < 1) fail("usage: shared_mutex THREADS MILLISECONDS", -1);

    // A dynamically allocated one, created and destroyed many times.
    for (int k = 0; k < 1000; k++) {
        auto *m = new std::shared_timed_mutex;
        m->lock_shared();
        if (m->try_lock()) fail("try_lock succeeded while read-locked", -1);
        m->unlock_shared();
        std::unique_lock<std::shared_timed_mutex> lk(*m);
        lk.unlock();
        delete m;
    }

    std::vector<Counts> counts(threads);
    std::vector<std::thread> ts;
    for (int k = 0; k < threads; k++) ts.emplace_back(worker, k + 1, &counts[k]);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    stop = true;
    Counts sum;
    for (int k = 0; k < threads; k++) {
        ts[k].join();
        sum.reads += counts[k].reads;
        sum.writes += counts[k].writes;
        sum.busy += counts[k].busy;
        sum.timeouts += counts[k].timeouts;
    }
    long writes = 0;
    for (int i = 0; i < 4; i++) {
        if (plain[i].a != plain[i].b || plain[i].a != plain[i].writes) fail("plain: lost writes", i);
        if (timed[i].a != timed[i].b || timed[i].a != timed[i].writes) fail("timed: lost writes", i);
        writes += plain[i].a + timed[i].a;
    }
    if (writes != sum.writes) fail("write count differs", -1);
    if (sum.reads == 0 || sum.writes == 0) fail("no progress", -1);
    std::printf("shared_mutex: ok threads=%d reads=%ld writes=%ld busy=%ld timeouts=%ld\n", threads, sum.reads,
                sum.writes, sum.busy, sum.timeouts);
    return 0;
}
