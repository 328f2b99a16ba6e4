// The LibTorch headers that the tensor-using libraries need, precompiled once.
// Deliberately not <torch/torch.h>: that pulls in the data loaders, the JIT
// and serialization, which nothing here uses.
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/pimpl.h>
