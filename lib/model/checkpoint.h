#pragma once
// Hugging Face checkpoints in and out, by Hugging Face parameter names.
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace hpcbench::model {

// The raw safetensors format: an 8-byte little-endian header length, a JSON
// header (dtype, shape, data_offsets per tensor), then the bytes.
std::map<std::string, at::Tensor> read_safetensors(const std::filesystem::path& path);
// Written atomically; tensors are made contiguous CPU tensors first.
void write_safetensors(const std::map<std::string, at::Tensor>& tensors,
                       const std::filesystem::path& path);

struct LoadReport {
  std::vector<std::string> skipped;      // in the file, unused by a QA model (pooler, MLM/NSP heads)
  std::vector<std::string> initialised;  // in the model, absent from the file (a fresh QA head)
};

// Loads model.safetensors or pytorch_model.bin (or a folder holding one) into
// `model`, matching Hugging Face names (a bare BertModel's names, without the
// "bert." prefix, are accepted too). A shape mismatch or a missing encoder
// tensor is a UserError naming the tensor; so is an encoder tensor the model
// lacks (more layers in the file) or a config.json beside the weights that
// disagrees with the model's configuration. Pooler and pre-training heads are
// skipped (one log line); a missing qa_outputs is initialised as Hugging Face
// does (one log line). Parameters are copied in place (device, dtype kept).
LoadReport load_hf_checkpoint(torch::nn::Module& model, const std::filesystem::path& path);

// The model's parameters and buffers under their Hugging Face names, as
// safetensors. A path ending in .safetensors is that file; any other path is a
// folder that gets model.safetensors and (for BertForQuestionAnswering) its
// config.json: what BertForQuestionAnswering.from_pretrained reads.
void save_checkpoint(const torch::nn::Module& model, const std::filesystem::path& path);

}  // namespace hpcbench::model
