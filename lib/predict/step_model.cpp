#include "predict/step_model.h"

#include "core/error.h"

namespace hpcbench::predict {

std::vector<Task> step_schedule(const Baseline& base, const Layout& l, const strategies::Choice& s, const Shape& shape,
                                const CommModel& comm, const StepOptions& o) {
  if (shape.nodes < 1 || shape.gpus_per_node < 1) fail("--nodes and --gpus-per-node must be at least 1");
  if (o.grad_accum < 1) fail("gradient accumulation {} must be at least 1", o.grad_accum);
  if (auto why = s.unsupported(shape); !why.empty()) fail("--strategies {}: {}", s.label(), why);
  strategies::StepInputs in;
  in.base = {base.forward_s, base.backward_s, base.other_s, base.optimizer_s};
  in.layout = &l;
  in.shape = shape;
  in.batch = base.batch;
  in.grad_accum = o.grad_accum;
  in.rows = base.batch;
  in.seq = base.seq;
  in.compute_bytes = o.compute_bytes;
  in.reduce_bytes = o.reduce_bytes;
  in.param_grad_bytes = o.param_grad_bytes;
  strategies::StepBuilder b;
  s.spec().schedule(s.options(), in, b);
  auto tasks = b.take();
  // A reduce to one rank moves what a broadcast moves, the other way.
  for (auto& t : tasks)
    if (t.stream == Stream::comm) t.seconds = comm.seconds(t.kind == "reduce" ? "broadcast" : t.kind, t.bytes, t.group);
  return tasks;
}

strategies::StateBytes model_state(const strategies::Choice& s, const Layout& l, const Shape& shape,
                                   const StepOptions& o) {
  return s.memory({l.unit_numel, shape, o.compute_bytes, o.reduce_bytes, o.resident});
}

Prediction predict_step(const Baseline& base, const Layout& l, const strategies::Choice& s, const Shape& shape,
                        const CommModel& comm, const StepOptions& o) {
  auto tasks = step_schedule(base, l, s, shape, comm, o);
  auto r = replay(tasks);
  Prediction p;
  p.strategy = s.label();
  p.shape = shape;
  p.grad_accum = o.grad_accum;
  p.step_s = r.makespan;
  for (auto& t : tasks) {
    if (t.stream != Stream::compute) continue;
    if (t.kind == "optimizer") p.optimizer_s += t.seconds;
    else if (t.kind == "other") p.other_s += t.seconds;
    else p.compute_s += t.seconds;
  }
  p.exposed_s = r.exposed;
  p.comm_s = r.comm;
  p.exposed_by_op = r.exposed_by_kind;
  // Every data-parallel replica takes a baseline batch per micro-step.
  const int world = shape.world(), replicas = s.spec().data_parallel_size(s.options(), shape);
  p.samples_per_s = static_cast<double>(base.batch * o.grad_accum * replicas) / p.step_s;
  p.speedup = p.samples_per_s / base.samples_per_s();
  p.efficiency = p.speedup / world;

  const auto mem = model_state(s, l, shape, o);
  p.memory_persistent = mem.persistent;
  p.memory_working = mem.working_set;
  p.memory_bytes = mem.total();
  return p;
}

}  // namespace hpcbench::predict
