// The kernel core a thread is running: its block index, unified buffer and
// the state every check needs.
#include "lngrad/ascendc/types.hpp"

namespace AscendC::detail {

Buffer kernel_stack_buffer() { return {nullptr, 0}; }

}  // namespace AscendC::detail
