// The out-of-line parts of the tiling-data classes: the refusals, which need
// lngrad::Error and its message format.
#include "lngrad/ascendc/tiling_data.hpp"

#include <cstring>
#include <string>

#include "lngrad/lngrad.hpp"

namespace AscendC::detail {

void save_tiling_data(const void* data, std::size_t size, void* buffer, std::size_t capacity,
                      const char* class_name) {
  const std::string api = std::string(class_name) + "::SaveToBuffer: ";
  if (buffer == nullptr) throw lngrad::Error(api + "pdata: expected a buffer, given a null pointer");
  if (capacity < size) {
    throw lngrad::Error(api + "capacity: expected at least " + std::to_string(size) + " bytes (GetDataSize()), given " +
                        std::to_string(capacity));
  }
  std::memcpy(buffer, data, size);
}

void tiling_data_null_array(const char* class_name, const char* field, std::size_t count) {
  throw lngrad::Error(std::string(class_name) + "::set_" + field + ": " + field + ": expected a pointer to " +
                      std::to_string(count) + " elements, given a null pointer");
}

}  // namespace AscendC::detail
