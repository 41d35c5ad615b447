// The LibTorch headers the ca_torch translation units share, precompiled once.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
