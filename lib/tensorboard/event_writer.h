#pragma once
// TensorBoard event files: TFRecord frames (crc32c.h) around Event protocol
// buffers (proto/*.proto), written with the protobuf library. Torch-free: it
// takes tags, steps, values and wall times.
//
// Records are buffered and written to the file by a background thread every
// `flush_secs`, so TensorBoard shows a run as it goes and a process killed
// mid-way leaves every record up to its last flush (a frame is written whole
// or the reader stops before it). Built only where the protobuf library is
// (available()); elsewhere constructing a writer throws a UserError.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace hpcbench::tensorboard {

// Whether this build has the writer (CMake option HPCBENCH_WITH_TENSORBOARD).
bool available();
// Seconds since the epoch, as TensorBoard's wall_time.
double wall_now();

struct Scalar {
  std::string tag;
  double value;
};

struct WriterOptions {
  double flush_secs = 2;  // <= 0: no background thread, flush() alone writes
  // Called on the flushing thread before each flush (RunLog adds the device
  // samples taken since the previous one there, off the training thread).
  std::function<void()> on_flush;
};

// An hparam's value: a string, a number or a flag.
using HParamValue = std::variant<std::string, double, bool>;
struct HParamDef {
  std::string name, description;
  std::vector<HParamValue> values;  // every value it takes (the discrete domain)
};
struct MetricDef {
  std::string tag, display_name, description;
};

class EventWriter {
 public:
  // A new file events.out.tfevents.<seconds>.<host>.<pid>.<n> in `dir`
  // (created if needed).
  explicit EventWriter(const std::filesystem::path& dir, WriterOptions options = {});
  // Exactly `file` (replaced if it exists).
  static std::unique_ptr<EventWriter> at(const std::filesystem::path& file, WriterOptions options = {});
  ~EventWriter();  // flushes
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // One event holding every value as a float32 simple_value, the form
  // PyTorch's SummaryWriter writes (TensorBoard shows it as a scalar).
  void scalars(int64_t step, double wall_time, const std::vector<Scalar>& values);
  void scalar(const std::string& tag, int64_t step, double value, double wall_time) {
    scalars(step, wall_time, {{tag, value}});
  }
  // Markdown for the text plugin.
  void text(const std::string& tag, int64_t step, const std::string& markdown, double wall_time);

  // The HParams plugin's summaries: the experiment (which hparams and metrics
  // its table has; once, in the log folder's top run), and a session (one
  // configuration: its hparams, then its end).
  void hparams_experiment(const std::vector<HParamDef>& hparams, const std::vector<MetricDef>& metrics,
                          double wall_time);
  void hparams_session_start(const std::vector<std::pair<std::string, HParamValue>>& hparams,
                             const std::string& group, double wall_time);
  void hparams_session_end(bool success, double wall_time);

  void flush();
  // Writes what is pending, syncs and closes the file; throws UserError
  // naming the file when any write to it failed (a full disk: the file then
  // ends at its last whole record). The destructor alone never throws: a
  // live log's failure is a warning, the training goes on.
  void close();
  const std::filesystem::path& path() const;

  struct Impl;  // the protobuf side, in event_writer.cpp

 private:
  EventWriter(const std::filesystem::path& file, WriterOptions options, int);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpcbench::tensorboard
