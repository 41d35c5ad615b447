// SIGINT/SIGTERM set a flag that long loops poll, so a tool stops between
// records, removes its temporary files and exits 130.
#pragma once

namespace ca {

/// Installs the handlers (idempotent) and ignores SIGPIPE, so writes to a
/// closed pipe fail with EPIPE instead of killing the process.
void install_interrupt_handlers();
/// True once SIGINT or SIGTERM arrived.
bool interrupted();

}  // namespace ca
