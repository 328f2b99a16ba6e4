#include "tensorboard/event_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/hostinfo.h"

#include <spdlog/spdlog.h>
#include "event.pb.h"
#include "hparams.pb.h"
#include "summary.pb.h"
#include "tensorboard/crc32c.h"

namespace hpcbench::tensorboard {

namespace fs = std::filesystem;

bool available() { return true; }

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct EventWriter::Impl {
  fs::path path;
  int fd = -1;
  WriterOptions options;
  std::mutex mutex;  // pending, seen_tags
  std::string pending;
  std::set<std::string> seen_tags;  // a tag's metadata goes with its first value only
  std::mutex write_mutex;           // one write(2) sequence at a time
  std::condition_variable cv;
  bool stopping = false;
  std::thread thread;

  void add(const tb::Event& e) {
    auto frame = tfrecord_frame(e.SerializeAsString());
    std::lock_guard lock(mutex);
    pending += frame;
  }

  // Where the last whole frame ends, and the first write error (0: none).
  off_t committed = 0;
  int error = 0;

  void write_pending() {
    std::lock_guard wlock(write_mutex);
    std::string out;
    {
      std::lock_guard lock(mutex);
      out.swap(pending);
    }
    if (error != 0) return;  // the file already ends at its last whole frame
    const char* p = out.data();
    size_t left = out.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // A full disk must not stop the training: the file is cut back to
        // its last whole frame, which readers take as its end, and nothing
        // more is written to it. close() reports it.
        error = n < 0 ? errno : ENOSPC;
        if (::ftruncate(fd, committed) == 0) ::lseek(fd, committed, SEEK_SET);
        spdlog::warn("TensorBoard: cannot write {}: {}; it ends at its last whole record, and the run goes on",
                     path.string(), std::strerror(error));
        return;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    committed += static_cast<off_t>(out.size());
  }

  void loop() {
    std::unique_lock lock(mutex);
    auto period = std::chrono::duration<double>(options.flush_secs);
    while (!stopping) {
      cv.wait_for(lock, period, [&] { return stopping; });
      if (stopping) break;
      lock.unlock();
      if (options.on_flush) options.on_flush();
      write_pending();
      lock.lock();
    }
  }
};

EventWriter::EventWriter(const fs::path& dir, WriterOptions options)
    : EventWriter([&] {
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) fail("cannot create the TensorBoard folder {}: {}", dir.string(), ec.message());
        static std::atomic<int> count{0};
        return dir / fmt::format("events.out.tfevents.{}.{}.{}.{}", static_cast<long long>(wall_now()), hostname(),
                                 ::getpid(), count++);
      }(), std::move(options), 0) {}

std::unique_ptr<EventWriter> EventWriter::at(const fs::path& file, WriterOptions options) {
  return std::unique_ptr<EventWriter>(new EventWriter(file, std::move(options), 0));
}

EventWriter::EventWriter(const fs::path& file, WriterOptions options, int) : impl_(std::make_unique<Impl>()) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  impl_->path = file;
  impl_->options = std::move(options);
  impl_->fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (impl_->fd < 0) fail("cannot write the TensorBoard event file {}: {}", file.string(), std::strerror(errno));
  tb::Event e;
  e.set_wall_time(wall_now());
  e.set_file_version("brain.Event:2");
  impl_->add(e);
  impl_->write_pending();
  if (impl_->options.flush_secs > 0) impl_->thread = std::thread([this] { impl_->loop(); });
}

EventWriter::~EventWriter() {
  if (impl_->thread.joinable()) {
    {
      std::lock_guard lock(impl_->mutex);
      impl_->stopping = true;
    }
    impl_->cv.notify_all();
    impl_->thread.join();
  }
  if (impl_->fd < 0) return;  // closed
  impl_->write_pending();
  ::close(impl_->fd);
}

void EventWriter::close() {
  if (impl_->thread.joinable()) {
    {
      std::lock_guard lock(impl_->mutex);
      impl_->stopping = true;
    }
    impl_->cv.notify_all();
    impl_->thread.join();
  }
  impl_->write_pending();
  int e = impl_->error;
  if (e == 0 && ::fsync(impl_->fd) != 0 && errno != EINVAL) e = errno;
  if (::close(impl_->fd) != 0 && e == 0) e = errno;
  impl_->fd = -1;
  if (e != 0)
    fail("cannot write the TensorBoard event file {}: {} (it holds only the records before that)",
         impl_->path.string(), std::strerror(e));
}

const fs::path& EventWriter::path() const { return impl_->path; }

void EventWriter::flush() { impl_->write_pending(); }

namespace {

bool first_use(EventWriter::Impl& impl, const std::string& tag) {
  std::lock_guard lock(impl.mutex);
  return impl.seen_tags.insert(tag).second;
}

void set_plugin(tb::Summary::Value* v, const char* plugin, tb::DataClass data_class, std::string content = {}) {
  auto* m = v->mutable_metadata();
  m->mutable_plugin_data()->set_plugin_name(plugin);
  m->mutable_plugin_data()->set_content(std::move(content));
  m->set_data_class(data_class);
}

tb::Value to_value(const HParamValue& h) {
  tb::Value v;
  if (auto* s = std::get_if<std::string>(&h)) v.set_string_value(*s);
  else if (auto* d = std::get_if<double>(&h)) v.set_number_value(*d);
  else v.set_bool_value(std::get<bool>(h));
  return v;
}

// The HParams plugin keeps its data in the metadata; the value is a
// placeholder tensor (0.0f), as its own summary writer does.
void add_hparams(EventWriter::Impl& impl, const char* tag, const tb::HParamsPluginData& data, double wall_time) {
  tb::Event e;
  e.set_wall_time(wall_time);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  set_plugin(v, "hparams", tb::DATA_CLASS_UNKNOWN, data.SerializeAsString());
  v->mutable_tensor()->set_dtype(tb::DT_FLOAT);
  v->mutable_tensor()->mutable_tensor_shape();
  v->mutable_tensor()->add_float_val(0.0f);
  impl.add(e);
}

}  // namespace

void EventWriter::scalars(int64_t step, double wall_time, const std::vector<Scalar>& values) {
  tb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  auto* summary = e.mutable_summary();
  for (auto& s : values) {
    auto* v = summary->add_value();
    v->set_tag(s.tag);
    // simple_value with no metadata, as PyTorch's SummaryWriter.add_scalar
    // writes it: TensorBoard (its data server and its Python loader alike)
    // migrates it to a scalars-plugin tensor, and the readers people pull
    // PyTorch and Lightning logs with (EventAccumulator.Scalars, tbparse's
    // .scalars) see simple_value only, not the plugin's tensor form.
    v->set_simple_value(static_cast<float>(s.value));
  }
  impl_->add(e);
}

void EventWriter::text(const std::string& tag, int64_t step, const std::string& markdown, double wall_time) {
  tb::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  if (first_use(*impl_, tag)) set_plugin(v, "text", tb::DATA_CLASS_TENSOR);
  auto* t = v->mutable_tensor();
  t->set_dtype(tb::DT_STRING);
  t->mutable_tensor_shape();
  t->add_string_val(markdown);
  impl_->add(e);
}

void EventWriter::hparams_experiment(const std::vector<HParamDef>& hparams, const std::vector<MetricDef>& metrics,
                                     double wall_time) {
  tb::HParamsPluginData data;
  auto* x = data.mutable_experiment();
  x->set_time_created_secs(wall_time);
  for (auto& h : hparams) {
    auto* info = x->add_hparam_infos();
    info->set_name(h.name);
    info->set_description(h.description);
    bool text = !h.values.empty() && std::holds_alternative<std::string>(h.values.front());
    bool flag = !h.values.empty() && std::holds_alternative<bool>(h.values.front());
    info->set_type(text ? tb::DATA_TYPE_STRING : flag ? tb::DATA_TYPE_BOOL : tb::DATA_TYPE_FLOAT64);
    for (auto& value : h.values) *info->mutable_domain_discrete()->add_values() = to_value(value);
    info->set_differs(h.values.size() > 1);
  }
  for (auto& m : metrics) {
    auto* info = x->add_metric_infos();
    info->mutable_name()->set_tag(m.tag);
    info->set_display_name(m.display_name);
    info->set_description(m.description);
  }
  add_hparams(*impl_, "_hparams_/experiment", data, wall_time);
}

void EventWriter::hparams_session_start(const std::vector<std::pair<std::string, HParamValue>>& hparams,
                                        const std::string& group, double wall_time) {
  tb::HParamsPluginData data;
  auto* s = data.mutable_session_start_info();
  for (auto& [name, value] : hparams) (*s->mutable_hparams())[name] = to_value(value);
  s->set_group_name(group);
  s->set_start_time_secs(wall_time);
  add_hparams(*impl_, "_hparams_/session_start_info", data, wall_time);
}

void EventWriter::hparams_session_end(bool success, double wall_time) {
  tb::HParamsPluginData data;
  auto* s = data.mutable_session_end_info();
  s->set_status(success ? tb::STATUS_SUCCESS : tb::STATUS_FAILURE);
  s->set_end_time_secs(wall_time);
  add_hparams(*impl_, "_hparams_/session_end_info", data, wall_time);
}

}  // namespace hpcbench::tensorboard
