// The writer where the protobuf library is absent (the GPU machines' staged
// headers): nothing is written and asking for a writer says why.
#include "core/error.h"
#include "tensorboard/event_writer.h"

#include <chrono>

namespace hpcbench::tensorboard {

namespace fs = std::filesystem;

bool available() { return false; }

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct EventWriter::Impl {};

EventWriter::EventWriter(const fs::path&, WriterOptions) {
  fail("this hpcbench was built without the TensorBoard writer (no protobuf library: install libprotobuf-dev "
       "and protobuf-compiler and configure again; `hpcbench --version` says whether it is built)");
}
EventWriter::EventWriter(const fs::path& f, WriterOptions o, int) : EventWriter(f, std::move(o)) {}
std::unique_ptr<EventWriter> EventWriter::at(const fs::path& file, WriterOptions options) {
  return std::unique_ptr<EventWriter>(new EventWriter(file, std::move(options), 0));
}
EventWriter::~EventWriter() = default;
void EventWriter::scalars(int64_t, double, const std::vector<Scalar>&) {}
void EventWriter::text(const std::string&, int64_t, const std::string&, double) {}
void EventWriter::hparams_experiment(const std::vector<HParamDef>&, const std::vector<MetricDef>&, double) {}
void EventWriter::hparams_session_start(const std::vector<std::pair<std::string, HParamValue>>&, const std::string&,
                                        double) {}
void EventWriter::hparams_session_end(bool, double) {}
void EventWriter::flush() {}
void EventWriter::close() {}
const fs::path& EventWriter::path() const {
  static const fs::path none;
  return none;
}

}  // namespace hpcbench::tensorboard
