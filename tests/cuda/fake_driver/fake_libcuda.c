/* A stand-in for libcuda.so.1 with the few entry points CUDARuntime calls, so its flow
 * (contexts, module load, parameter packing, shared-memory opt-in, streams, events, error
 * reporting) is tested on machines without a GPU. It runs nothing: cuLaunchKernel records
 * what it was given, and the fake_* functions let the test read that back or inject errors.
 * cuda-bindings resolves every driver function through cuGetProcAddress_v2; this one
 * answers with dlsym, so a function not defined here reads as "not found". */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef int CUresult;
enum {
  SUCCESS = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, INVALID_IMAGE = 200, INVALID_CONTEXT = 201,
  NOT_FOUND = 500, ILLEGAL_ADDRESS = 700
};

#define MAX_PARAMS 32
static int initialized = 0;
static uintptr_t current_context = 0;
static const uintptr_t primary_context = 0xC0C0;
static const uintptr_t module_handle = 0xAA00;
static char module_image[1 << 20];
static size_t module_size = 0;
static char function_name[256];
static int pending_error = 0;
static int param_count = 0; /* a real driver reads it from the cubin; the test tells us */
static int launch_count = 0;
static unsigned last_grid[3], last_block[3], last_shared;
static uintptr_t last_stream;
static unsigned char last_params[MAX_PARAMS][8];
static int max_dynamic_shared = 0;
static size_t memset_words = 0;
static unsigned memset_value = 0;
static int events_recorded = 0;

/* ---- what the test reads back / injects */
int fake_launch_count(void) { return launch_count; }
void fake_last_launch(unsigned* grid_block_shared, uint64_t* stream) {
  for (int i = 0; i < 3; ++i) { grid_block_shared[i] = last_grid[i]; grid_block_shared[3 + i] = last_block[i]; }
  grid_block_shared[6] = last_shared;
  *stream = last_stream;
}
void fake_last_param(int index, unsigned char* out8) { memcpy(out8, last_params[index], 8); }
void fake_set_pending_error(int error) { pending_error = error; }
void fake_set_param_count(int count) { param_count = count < MAX_PARAMS ? count : MAX_PARAMS; }
void fake_clear_current_context(void) { current_context = 0; }
int fake_max_dynamic_shared(void) { return max_dynamic_shared; }
const char* fake_function_name(void) { return function_name; }
void fake_memset(uint64_t* words, unsigned* value) { *words = memset_words; *value = memset_value; }
int fake_events_recorded(void) { return events_recorded; }

/* ---- the driver API */
CUresult cuDriverGetVersion(int* version) { *version = 13000; return SUCCESS; }
CUresult cuInit(unsigned flags) { (void)flags; initialized = 1; return SUCCESS; }
CUresult cuDeviceGetCount(int* count) { *count = initialized ? 1 : 0; return initialized ? SUCCESS : NOT_INITIALIZED; }
CUresult cuDeviceGet(int* device, int ordinal) {
  if (ordinal != 0) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *device = 0;
  return SUCCESS;
}
CUresult cuDeviceGetName(char* name, int length, int device) {
  (void)device;
  strncpy(name, "Fake GPU", length);
  return SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(uintptr_t* context, int device) { (void)device; *context = primary_context; return SUCCESS; }
CUresult cuCtxSetCurrent(uintptr_t context) { current_context = context; return SUCCESS; }
CUresult cuCtxGetCurrent(uintptr_t* context) { *context = current_context; return SUCCESS; }
static uintptr_t context_stack[8];
static int context_depth = 0;
int fake_context_depth(void) { return context_depth; }
CUresult cuCtxPushCurrent(uintptr_t context) {
  if (context_depth == 8) return INVALID_VALUE;
  context_stack[context_depth++] = current_context;
  current_context = context;
  return SUCCESS;
}
CUresult cuCtxPopCurrent(uintptr_t* context) {
  if (context_depth == 0) return INVALID_CONTEXT;
  if (context) *context = current_context;
  current_context = context_stack[--context_depth];
  return SUCCESS;
}
void fake_set_current_context(uintptr_t context) { current_context = context; }
uintptr_t fake_current_context(void) { return current_context; }
CUresult cuCtxGetDevice(int* device) { if (!current_context) return INVALID_CONTEXT; *device = 0; return SUCCESS; }
CUresult cuCtxSynchronize(void) {
  if (!current_context) return INVALID_CONTEXT;
  return current_context == primary_context ? pending_error : SUCCESS; /* errors are per context */
}

CUresult cuModuleLoadData(uintptr_t* module, const void* image) {
  if (current_context != primary_context) return INVALID_CONTEXT;
  if (memcmp(image, "\x7f" "ELF", 4) != 0) return INVALID_IMAGE;
  /* The ELF header gives the image's size: the section headers come last in a cubin. */
  const uint64_t shoff = *(const uint64_t*)((const char*)image + 0x28);
  const uint16_t shentsize = *(const uint16_t*)((const char*)image + 0x3A);
  const uint16_t shnum = *(const uint16_t*)((const char*)image + 0x3C);
  size_t size = shoff + (size_t)shentsize * shnum;
  module_size = size < sizeof(module_image) ? size : sizeof(module_image);
  memcpy(module_image, image, module_size);
  *module = module_handle;
  return SUCCESS;
}
CUresult cuModuleUnload(uintptr_t module) { return module == module_handle ? SUCCESS : INVALID_VALUE; }
CUresult cuModuleGetFunction(uintptr_t* function, uintptr_t module, const char* name) {
  if (module != module_handle) return INVALID_VALUE;
  size_t n = strlen(name);
  for (size_t i = 0; i + n < module_size; ++i) {
    if (memcmp(module_image + i, name, n) == 0 && module_image[i + n] == '\0' && (i == 0 || module_image[i - 1] == '\0')) {
      strncpy(function_name, name, sizeof(function_name) - 1);
      *function = 0xF000 + n;
      return SUCCESS;
    }
  }
  return NOT_FOUND;
}
CUresult cuFuncGetAttribute(int* value, int attribute, uintptr_t function) {
  (void)function;
  *value = 0; /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (1) and the rest: no static shared memory */
  (void)attribute;
  return SUCCESS;
}
CUresult cuFuncSetAttribute(uintptr_t function, int attribute, int value) {
  (void)function;
  if (attribute == 8) { /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    if (value > 232448) return INVALID_VALUE;
    max_dynamic_shared = value;
  }
  return SUCCESS;
}
CUresult cuLaunchKernel(uintptr_t function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, uintptr_t stream, void** params, void** extra) {
  (void)function; (void)extra;
  if (!current_context) return INVALID_CONTEXT;
  if (current_context != primary_context) return 400; /* CUDA_ERROR_INVALID_HANDLE: another context's function */
  if ((int)shared > (max_dynamic_shared > 49152 ? max_dynamic_shared : 49152)) return INVALID_VALUE;
  last_grid[0] = gx; last_grid[1] = gy; last_grid[2] = gz;
  last_block[0] = bx; last_block[1] = by; last_block[2] = bz;
  last_shared = shared;
  last_stream = stream;
  for (int i = 0; params && i < param_count; ++i) memcpy(last_params[i], params[i], 8);
  ++launch_count;
  return SUCCESS;
}

CUresult cuEventCreate(uintptr_t* event, unsigned flags) { (void)flags; static uintptr_t next = 0xE000; *event = next++; return SUCCESS; }
CUresult cuEventDestroy(uintptr_t event) { (void)event; return SUCCESS; }
CUresult cuEventRecord(uintptr_t event, uintptr_t stream) { (void)event; (void)stream; ++events_recorded; return SUCCESS; }
CUresult cuEventSynchronize(uintptr_t event) { (void)event; return pending_error; }
CUresult cuEventElapsedTime(float* ms, uintptr_t start, uintptr_t end) { (void)start; (void)end; *ms = 1.5f; return SUCCESS; }

CUresult cuMemAlloc(uint64_t* pointer, size_t bytes) { (void)bytes; *pointer = 0xD0000000ull; return SUCCESS; }
CUresult cuMemFree(uint64_t pointer) { (void)pointer; return SUCCESS; }
CUresult cuMemsetD32Async(uint64_t pointer, unsigned value, size_t words, uintptr_t stream) {
  (void)pointer; (void)stream;
  memset_words = words;
  memset_value = value;
  return SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** text) {
  switch (error) {
    case SUCCESS: *text = "CUDA_SUCCESS"; return SUCCESS;
    case INVALID_VALUE: *text = "CUDA_ERROR_INVALID_VALUE"; return SUCCESS;
    case INVALID_CONTEXT: *text = "CUDA_ERROR_INVALID_CONTEXT"; return SUCCESS;
    case NOT_FOUND: *text = "CUDA_ERROR_NOT_FOUND"; return SUCCESS;
    case ILLEGAL_ADDRESS: *text = "CUDA_ERROR_ILLEGAL_ADDRESS"; return SUCCESS;
    default: *text = 0; return INVALID_VALUE;
  }
}
CUresult cuGetErrorString(CUresult error, const char** text) {
  switch (error) {
    case INVALID_VALUE: *text = "invalid argument"; return SUCCESS;
    case NOT_FOUND: *text = "named symbol not found"; return SUCCESS;
    case ILLEGAL_ADDRESS: *text = "an illegal memory access was encountered"; return SUCCESS;
    default: *text = "fake driver error"; return SUCCESS;
  }
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  (void)version; (void)flags;
  void* found = dlsym(RTLD_DEFAULT, symbol);
  *pfn = found;
  if (status) *status = found ? 0 : 1; /* CU_GET_PROC_ADDRESS_SUCCESS / _SYMBOL_NOT_FOUND */
  return found ? SUCCESS : NOT_FOUND;
}
