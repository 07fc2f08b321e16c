// What the kernel launcher needs from the ACL runtime (src/ascendc/acl.cpp):
// whether a stream can take a launch, and where a launched kernel's error
// goes so that aclrtSynchronizeStream returns it.
#pragma once

#include <string>

#include "lngrad/cann/acl/acl.h"

namespace AscendC::detail {

// Whether a launch may use `stream`: nullptr (the calling thread's current
// context's default stream) or a live stream from aclrtCreateStream. When
// not, returns CANN's error code and sets *why to a sentence naming the
// problem; ACL_SUCCESS otherwise.
aclError check_launch_stream(aclrtStream stream, std::string* why);

// Records the error of a kernel launched on `stream` (launches run at once):
// the next aclrtSynchronizeStream on it (or aclrtSynchronizeDevice,
// aclrtDestroyStream) returns `code` and makes `message` the calling
// thread's aclGetRecentErrMsg. A stream that is not live records nothing.
void record_stream_error(aclrtStream stream, const std::string& message,
                         aclError code = ACL_ERROR_RT_AICORE_EXCEPTION);

}  // namespace AscendC::detail
