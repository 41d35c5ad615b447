// KernelBench import (ca-crawl kernelbench): bridge/import_kernelbench.py turns
// problem files into task records through torch.export; this side checks each
// one as `ca-crawl tasks` does, so a task the interpreter cannot run is
// reported with its reason rather than passed on, and can run each task and
// dump its inputs and the interpreter's outputs, or only their digests, for
// bridge/check_import.py to compare with eager.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "ir/backend.h"
#include "util/jsonl.h"

namespace ca {

struct KernelbenchImport {
  std::vector<std::string> dirs;   // problem folders; a folder named levelN gives records level N
  std::string params_dir;          // where the bridge writes <id>.safetensors
  int scale = 1;                   // size divisor (rule in the bridge's docstring and man ca-crawl)
  uint64_t seed = 0;               // torch.manual_seed before each Model is built; the seed of dumped inputs
  std::string dump_dir;            // "" = no dump; else <dump_dir>/<id>.safetensors per imported task
  bool digests = false;            // run each task and give its digest record (ImportedTask::digest)
  Backend backend = Backend::cpu;  // shape checking's fallback and the device the tasks run on
};

/// A finished import: the checked task and, with KernelbenchImport::digests, the record of its run for
/// bridge/check_import.py --digests: {"id", "seed", "device", "inputs": [{"name", "stream", "digest"}],
/// "outputs": [{"dtype", "shape", "digest"}]}, digests of row-major bytes (torch/tensors.h tensor_digest).
struct ImportedTask {
  Json task;
  Json digest;  // null without KernelbenchImport::digests
};

/// The bridge's argv: $CA_PYTHON, else <dir of the executable>/../../.venv/bin/python; the script beside the
/// executable's checkout (../../bridge/) or its install (../share/cuda-agent/bridge/).
std::expected<std::vector<std::string>, std::string> import_bridge_command(const KernelbenchImport& options);

/// Runs the bridge and returns its records (task or import_error), one per problem file.
std::expected<std::vector<Json>, std::string> run_import_bridge(const KernelbenchImport& options);

/// Finishes one bridge record: a task is checked (check_task, which reads its param files) and, with a dump
/// directory or digests, run on `device` on inputs from `seed` (input i on stream i, as make_tensors draws them):
/// its inputs ("inputs.<name>") and outputs ("outputs.<i>") go to <dump_dir>/<id>.safetensors, and their digests
/// to ImportedTask::digest. Returns the checked task, or the error that makes it an import_error record.
std::expected<ImportedTask, std::string> finish_import(const Json& record, const KernelbenchImport& options);

/// The import_error record for `record` (a task the checks refused, or the importer's own import_error): its identity
/// fields, the reason, the stage that failed (the importer's, or "check") and the program when there is one.
Json import_error_record(const Json& record, const std::string& error);

}  // namespace ca
