#pragma once
// Turns the names a user may give a run into the files they stand for:
// --model bert-base-uncased (a Hugging Face hub id, optionally @revision)
// becomes the cached config.json, and fills --vocab and --checkpoint when
// they are not given; --train-data / --eval-data squad or squad_v2 become the
// fetched train / dev JSONs. Caches only, never the network.
#include <string>

namespace hpcbench::train {

struct TrainConfig;

// Throws UserError with the exact `hpcbench fetch` command when a name is not
// in the cache.
void resolve_names(TrainConfig& cfg);

// Whether `model` is a hub name whose snapshot brings a vocab.txt, so that a
// configuration need not name one (resolve_names fills it, or fails).
bool model_brings_vocab(const std::string& model);

// For commands that take files rather than a run's settings (`hpcbench
// data`): `value` squad / squad_v2 becomes the cached JSON of `split`
// ("train" or "dev"); a hub model id becomes its cached vocab.txt. Anything
// else is left as it is (a path). Missing from the cache: UserError with the
// fetch command, naming `flag`.
void resolve_dataset(std::string& value, const char* flag, const char* split);
void resolve_vocab(std::string& value, const char* flag);

}  // namespace hpcbench::train
