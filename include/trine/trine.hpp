// trine: the umbrella header.
#pragma once

#include "trine/device.hpp"
#include "trine/dispatch.hpp"
#include "trine/dtype.hpp"
#include "trine/error.hpp"
#include "trine/batch.hpp"
#include "trine/future.hpp"
#include "trine/io.hpp"
#include "trine/quant.hpp"
#include "trine/memory.hpp"
#include "trine/ops.hpp"
#include "trine/shape.hpp"
#include "trine/tensor.hpp"
#include "trine/version.hpp"
