// Communication after MPI_Finalize is a clear MpiError, not a crash.
#include <cstdio>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

int main(int argc, char** argv) {
  cunumpy::init_mpi(&argc, &argv);
  cunumpy::Comm world = cunumpy::Comm::world();
  const int before = world.allreduce(1, cunumpy::Op::sum);
  cunumpy::finalize_mpi();
  int failures = before == world.size() ? 0 : 1;
  const char* calls[] = {"allreduce", "barrier", "bcast", "sendrecv"};
  for (const char* call : calls) {
    try {
      const std::string c = call;
      std::vector<double> v(2);
      if (c == "allreduce") world.allreduce(std::span(v), cunumpy::Op::sum);
      if (c == "barrier") world.barrier();
      if (c == "bcast") world.bcast(std::span(v), 0);
      if (c == "sendrecv")
        world.sendrecv<double>(v, cunumpy::proc_null, std::span(v), cunumpy::proc_null);
      std::printf("FAILED: %s after finalize did not throw\n", call);
      ++failures;
    } catch (const cunumpy::MpiError& e) {
      if (std::string(e.what()).find("after MPI_Finalize") == std::string::npos) {
        std::printf("FAILED: unexpected message: %s\n", e.what());
        ++failures;
      }
    }
  }
  std::printf("%s\n", failures == 0 ? "after_finalize: ok" : "after_finalize: FAILED");
  return failures == 0 ? 0 : 1;
}
