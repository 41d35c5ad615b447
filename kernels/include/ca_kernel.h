/* The kernel ABI (docs/ARCHITECTURE.md#contracts): the one header candidates build against.
 *
 * A candidate is a shared library exporting ca_forward. It never links
 * LibTorch. The harness owns every buffer: `inputs` are the task's inputs then
 * its params, in program order; `outputs` are allocated by the harness (and
 * filled with NaN before every call), in the order of the program's outputs.
 * On the cuda backend data pointers are device pointers and all work must be
 * enqueued on ctx->stream; on the cpu backend they are host pointers.
 * Return 0 on success; any other value fails the trial. */
#ifndef CA_KERNEL_H
#define CA_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CA_ABI_VERSION 1

/* Element types, in the order of the task IR's dtype names. */
typedef enum {
  CA_FLOAT32 = 0,
  CA_FLOAT64 = 1,
  CA_FLOAT16 = 2,
  CA_BFLOAT16 = 3,
  CA_INT64 = 4,
  CA_INT32 = 5,
  CA_INT16 = 6,
  CA_INT8 = 7,
  CA_UINT8 = 8,
  CA_BOOL = 9
} ca_dtype;

typedef enum { CA_DEVICE_CPU = 0, CA_DEVICE_CUDA = 1 } ca_device;

typedef struct {
  void* data;    /* host (cpu) or device (cuda) pointer */
  int32_t dtype; /* a ca_dtype */
  int32_t ndim;
  const int64_t* shape;   /* ndim sizes */
  const int64_t* strides; /* ndim strides, in elements; tensors are contiguous today */
} ca_tensor;

typedef struct ca_context ca_context;

struct ca_context {
  int32_t abi_version; /* CA_ABI_VERSION */
  int32_t device;      /* a ca_device */
  int32_t device_index;
  int32_t num_threads; /* cpu: threads the candidate may use */
  void* stream;        /* cuda: the cudaStream_t to enqueue all work on; NULL on cpu */
  void* cublas;        /* cuda: a cublasHandle_t bound to stream, or NULL */
  void* cudnn;         /* cuda: a cudnnHandle_t bound to stream, or NULL */
  /* Scratch memory owned by the harness, valid until ca_forward returns;
   * device memory on cuda. Returns NULL when `bytes` cannot be had. */
  void* (*workspace)(ca_context* ctx, size_t bytes);
  void* harness; /* private to the harness */
};

/* The entry point every candidate exports. */
int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs);

#ifdef __cplusplus
}
#endif

#endif /* CA_KERNEL_H */
