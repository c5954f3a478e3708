// Built without MPI but started as if by a launcher (the test sets Open MPI's variables):
// the Runtime warns and runs with the serial stand-in.
#include <gtest/gtest.h>

#include <string>

#include <cunumpy/cunumpy.hpp>

TEST(NoMpiBuild, LaunchedUnderALauncherWarnsAndRunsSerial) {
  ASSERT_TRUE(cunumpy::launched_under_mpi()) << "ctest sets OMPI_COMM_WORLD_SIZE for this test";
  testing::internal::CaptureStderr();
  cunumpy::Runtime rt;
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("built without MPI"), std::string::npos) << err;
  EXPECT_TRUE(rt.world().is_serial());
  EXPECT_EQ(rt.world().allreduce(5, cunumpy::Op::sum), 5);
  EXPECT_NE(rt.summary().find("serial stand-in"), std::string::npos);
}
