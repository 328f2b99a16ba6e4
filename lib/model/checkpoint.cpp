#include "model/checkpoint.h"

#include <spdlog/spdlog.h>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <bit>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/bounded_read.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "model/bert.h"

namespace fs = std::filesystem;

namespace hpcbench::model {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

struct DType {
  const char* name;
  at::ScalarType type;
};
constexpr DType kDTypes[] = {
    {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf},  {"BF16", at::kBFloat16},
    {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
    {"U8", at::kByte},    {"BOOL", at::kBool},
};

std::string shape_str(at::IntArrayRef s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::map<std::string, at::Tensor> read_pickle(const fs::path& path) {
  auto bytes = read_file(path, file_limit::kCheckpoint);
  c10::IValue v;
  try {
    v = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const c10::Error& e) {
    fail("{}: not a readable torch.save file: {}", path.string(), e.what_without_backtrace());
  }
  if (!v.isGenericDict()) fail("{}: expected a state_dict (a dict of tensors), found {}", path.string(), v.tagKind());
  std::map<std::string, at::Tensor> out;
  for (const auto& kv : v.toGenericDict()) {
    if (!kv.key().isString() || !kv.value().isTensor())
      fail("{}: entry {} is not a named tensor", path.string(), kv.key().tagKind());
    out.emplace(kv.key().toStringRef(), kv.value().toTensor());
  }
  return out;
}

// Hugging Face names: a bare BertModel (sentence-transformers, BertModel.save)
// has no "bert." prefix; TF-converted checkpoints call LayerNorm's weight and
// bias gamma and beta (Hugging Face renames them on load too).
std::string hf_name(std::string name) {
  for (const char* top : {"embeddings.", "encoder.", "pooler."})
    if (name.starts_with(top)) name = "bert." + name;
  auto replace_suffix = [&](std::string_view from, std::string_view to) {
    if (name.ends_with(from) && name.find("LayerNorm") != std::string::npos)
      name = name.substr(0, name.size() - from.size()) + std::string(to);
  };
  replace_suffix(".gamma", ".weight");
  replace_suffix(".beta", ".bias");
  return name;
}

// The error-code forms: a loop of links is then named by the reader
// (core/bounded_read.h), not thrown as a filesystem_error.
fs::path resolve_checkpoint(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const char* f : {"model.safetensors", "pytorch_model.bin"})
      if (fs::symlink_status(path / f, ec).type() != fs::file_type::not_found) return path / f;
    fail("checkpoint folder {} holds neither model.safetensors nor pytorch_model.bin", path.string());
  }
  if (fs::symlink_status(path, ec).type() == fs::file_type::not_found)
    fail("checkpoint {} does not exist", path.string());
  return path;
}

// A config.json beside the weights must describe the model being loaded;
// saying which field differs is clearer than the shape error it would cause.
void check_config(const BertForQuestionAnsweringImpl& qa, const fs::path& weights) {
  auto json = weights.parent_path() / "config.json";
  std::error_code ec;
  if (fs::symlink_status(json, ec).type() == fs::file_type::not_found) return;
  BertConfig file;
  try {
    file = BertConfig::from_json(json);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    spdlog::warn("checkpoint config not checked: {}", e.what());
    return;
  }
  const auto& m = qa.config();
  auto same = [&](const char* key, int64_t a, int64_t b) {
    if (a != b)
      fail("checkpoint {}: its config.json has {} = {} but the model ({}) has {}; build the model from {}",
           weights.string(), key, b, m.name, a, json.string());
  };
  same("vocab_size", m.vocab_size, file.vocab_size);
  same("hidden_size", m.hidden_size, file.hidden_size);
  same("num_hidden_layers", m.num_hidden_layers, file.num_hidden_layers);
  same("num_attention_heads", m.num_attention_heads, file.num_attention_heads);
  same("intermediate_size", m.intermediate_size, file.intermediate_size);
  same("max_position_embeddings", m.max_position_embeddings, file.max_position_embeddings);
  same("type_vocab_size", m.type_vocab_size, file.type_vocab_size);
}

// The fused model's one query-key-value projection (bert_modules.h) and the
// three Hugging Face tensors it stacks, in its row order.
constexpr const char* kFusedQkv[] = {"attention.self.qkv.weight", "attention.self.qkv.bias"};
constexpr const char* kQkvParts[] = {"query", "key", "value"};

// `name` with its fused suffix replaced by `part`'s ("...self.query.weight"),
// or "" when `name` is not a fused projection's.
std::string qkv_part_name(const std::string& name, const char* part) {
  for (const char* fused : kFusedQkv) {
    if (!name.ends_with(fused)) continue;
    const std::string_view suffix(fused);
    const auto kind = suffix.substr(suffix.rfind('.'));  // ".weight" or ".bias"
    return name.substr(0, name.size() - suffix.size()) + "attention.self." + part + std::string(kind);
  }
  return "";
}

// The file's query, key and value of a fused model's projection `name`,
// stacked, checked part by part so that an error names the file's tensor.
at::Tensor stacked_qkv(const std::map<std::string, at::Tensor>& tensors, const std::string& name,
                       const at::Tensor& param, const fs::path& file, std::set<std::string>& used) {
  std::vector<at::Tensor> parts;
  auto part_shape = param.sizes().vec();
  part_shape[0] /= 3;
  for (const char* part : kQkvParts) {
    const auto source = qkv_part_name(name, part);
    auto it = tensors.find(source);
    if (it == tensors.end())
      fail("checkpoint {} has no tensor {} (shape {}): it is not a BERT checkpoint of this architecture",
           file.string(), source, shape_str(part_shape));
    if (it->second.sizes() != at::IntArrayRef(part_shape))
      fail("checkpoint {}: tensor {} has shape {} but the model expects {}", file.string(), source,
           shape_str(it->second.sizes()), shape_str(part_shape));
    parts.push_back(it->second);
    used.insert(source);
  }
  return at::cat(parts, 0);
}

}  // namespace

std::map<std::string, at::Tensor> read_safetensors(const fs::path& path) {
  std::optional<ReadableFile> opened;
  try {
    opened.emplace(open_regular_file(path, file_limit::kCheckpoint));
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("cannot read safetensors file {}: {}", path.string(), e.what());
  }
  ReadableFile& in = *opened;
  const uint64_t size = in.size();
  uint64_t header_len = 0;
  if (size < 8 || !in.read_at(0, reinterpret_cast<char*>(&header_len), 8))
    fail("{}: truncated safetensors file ({} bytes, no header length)", path.string(), size);
  if (header_len > size - 8)
    fail("{}: truncated safetensors file: header of {} bytes but only {} bytes follow", path.string(), header_len,
         size - 8);
  std::string header(header_len, '\0');
  if (!in.read_at(8, header.data(), header.size()))
    fail("{}: truncated safetensors file (it shrank while it was read)", path.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: bad safetensors header: {}", path.string(), e.what());
  }
  if (!j.is_object()) fail("{}: bad safetensors header: not a JSON object", path.string());
  const uint64_t data_start = 8 + header_len, data_size = size - data_start;
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, e] : j.items()) {
    if (name == "__metadata__") continue;
    try {
      auto dtype_name = e.at("dtype").get<std::string>();
      auto shape = e.at("shape").get<std::vector<int64_t>>();
      auto offsets = e.at("data_offsets").get<std::vector<uint64_t>>();
      const DType* dt = nullptr;
      for (const auto& d : kDTypes)
        if (dtype_name == d.name) dt = &d;
      if (!dt) fail("{}: tensor {} has unsupported dtype {}", path.string(), name, dtype_name);
      if (offsets.size() != 2 || offsets[0] > offsets[1])
        fail("{}: tensor {} has bad data_offsets", path.string(), name);
      auto t = at::empty(shape, at::TensorOptions().dtype(dt->type));
      const uint64_t nbytes = static_cast<uint64_t>(t.nbytes());
      if (offsets[1] - offsets[0] != nbytes)
        fail("{}: tensor {} of shape {} and dtype {} needs {} bytes, its data_offsets give {}", path.string(), name,
             shape_str(shape), dtype_name, nbytes, offsets[1] - offsets[0]);
      if (offsets[1] > data_size)
        fail("{}: truncated safetensors file: tensor {} ends at byte {} of the data, which has only {}",
             path.string(), name, offsets[1], data_size);
      if (!in.read_at(data_start + offsets[0], static_cast<char*>(t.data_ptr()), nbytes))
        fail("{}: cannot read tensor {}", path.string(), name);
      out.emplace(name, std::move(t));
    } catch (const nlohmann::json::exception& ex) {
      fail("{}: bad safetensors header entry for tensor {}: {}", path.string(), name, ex.what());
    }
  }
  return out;
}

void write_safetensors(const std::map<std::string, at::Tensor>& tensors, const fs::path& path) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<at::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    auto t = tensor.detach().to(at::kCPU).contiguous();
    const DType* dt = nullptr;
    for (const auto& d : kDTypes)
      if (t.scalar_type() == d.type) dt = &d;
    if (!dt) fail("cannot write tensor {} to {}: dtype {} has no safetensors name", name, path.string(),
                  c10::toString(t.scalar_type()));
    const auto n = static_cast<uint64_t>(t.nbytes());
    header[name] = {{"dtype", dt->name}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + n}}};
    offset += n;
    data.push_back(std::move(t));
  }
  std::string h = header.dump();
  // The data starts 8-byte aligned, as the reference writer pads it.
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + h.size() + offset);
  uint64_t len = h.size();
  out.append(reinterpret_cast<const char*>(&len), 8);
  out += h;
  for (const auto& t : data) out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  write_file_atomic(path, out);
}

LoadReport load_hf_checkpoint(torch::nn::Module& model, const fs::path& path) {
  const auto file = resolve_checkpoint(path);
  auto* qa = dynamic_cast<BertForQuestionAnsweringImpl*>(&model);
  if (qa) check_config(*qa, file);
  const bool pickle = file.extension() == ".bin" || file.extension() == ".pt" || file.extension() == ".pth";
  std::map<std::string, at::Tensor> raw = pickle ? read_pickle(file) : read_safetensors(file);
  std::map<std::string, at::Tensor> tensors;
  for (auto& [k, v] : raw) tensors[hf_name(k)] = v;

  LoadReport report;
  auto params = model.named_parameters(/*recurse=*/true);
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& item : params) {
    const auto& name = item.key();
    auto& param = item.value();
    if (!qkv_part_name(name, "query").empty()) {
      tensors[name] = stacked_qkv(tensors, name, param, file, used);
      used.insert(name);
    }
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      if (name.starts_with("qa_outputs.")) {
        report.initialised.push_back(name);
        continue;
      }
      fail("checkpoint {} has no tensor {} (shape {}): it is not a BERT checkpoint of this architecture",
           file.string(), name, shape_str(param.sizes()));
    }
    const auto& t = it->second;
    if (t.sizes() != param.sizes()) {
      std::string hint;
      if (name.ends_with("word_embeddings.weight"))
        hint = fmt::format(" (a vocabulary of {} tokens against the model's {}: use the checkpoint's config.json)",
                           t.size(0), param.size(0));
      fail("checkpoint {}: tensor {} has shape {} but the model expects {}{}", file.string(), name,
           shape_str(t.sizes()), shape_str(param.sizes()), hint);
    }
    if (!at::isFloatingType(t.scalar_type()))
      fail("checkpoint {}: tensor {} has dtype {}, not a floating-point type", file.string(), name,
           c10::toString(t.scalar_type()));
    param.copy_(t);
    used.insert(name);
  }
  if (!report.initialised.empty()) {
    if (qa) {
      qa->init_qa_head();
    } else {
      for (const auto& n : report.initialised) params[n].normal_(0.0, 0.02);
    }
    spdlog::info("checkpoint {} has no question-answering head: {} initialised afresh", file.string(),
                 fmt::join(report.initialised, ", "));
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : tensors) {
    if (used.count(name)) continue;
    // Buffers Hugging Face recomputes (position_ids) are no weights.
    if (name.ends_with("position_ids") || name.ends_with("token_type_ids")) continue;
    if (name.starts_with("bert.embeddings.") || name.starts_with("bert.encoder."))
      fail("checkpoint {}: tensor {} {} is not in the model ({} layers): build the model from the checkpoint's "
           "config.json", file.string(), name, shape_str(t.sizes()), qa ? qa->config().num_hidden_layers : 0);
    report.skipped.push_back(name);
    if (!name.starts_with("bert.pooler.") && !name.starts_with("cls.")) unexpected.push_back(name);
  }
  if (!report.skipped.empty())
    spdlog::info("checkpoint {}: {} tensors unused by question answering skipped (pooler, pre-training heads)",
                 file.string(), report.skipped.size());
  if (!unexpected.empty())
    spdlog::warn("checkpoint {}: unexpected tensors skipped: {}", file.string(), fmt::join(unexpected, ", "));
  return report;
}

void save_checkpoint(const torch::nn::Module& model, const fs::path& path) {
  std::map<std::string, at::Tensor> tensors;
  for (const auto& p : model.named_parameters(true)) {
    // A fused projection is saved as the three tensors it stacks: the file
    // is the unfused model's, byte for byte.
    if (!qkv_part_name(p.key(), "query").empty()) {
      auto parts = p.value().chunk(3, 0);
      for (size_t k = 0; k < 3; ++k) tensors[qkv_part_name(p.key(), kQkvParts[k])] = parts[k];
      continue;
    }
    tensors[p.key()] = p.value();
  }
  for (const auto& b : model.named_buffers(true)) tensors[b.key()] = b.value();
  fs::path file = path;
  if (path.extension() != ".safetensors") {
    // A folder: what from_pretrained reads, config.json included.
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) fail("cannot create the checkpoint folder {}: {}", path.string(), ec.message());
    file = path / "model.safetensors";
    if (auto* qa = dynamic_cast<const BertForQuestionAnsweringImpl*>(&model))
      write_file_atomic(path / "config.json", qa->config().to_json());
  }
  write_safetensors(tensors, file);
}

}  // namespace hpcbench::model
