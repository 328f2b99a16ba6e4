#pragma once
// Turns the names a user may give a run into the files they stand for:
// --model bert-base-uncased (a Hugging Face hub id, optionally @revision)
// becomes the cached config.json, and fills --vocab and --checkpoint when
// they are not given; --train-data / --eval-data squad or squad_v2 become the
// fetched train / dev JSONs. Caches only, never the network.
namespace hpcbench::train {

struct TrainConfig;

// Throws UserError with the exact `hpcbench fetch` command when a name is not
// in the cache.
void resolve_names(TrainConfig& cfg);

}  // namespace hpcbench::train
