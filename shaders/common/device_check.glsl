// A failed device check (oa::Engine::register_device_check): the record,
// bound as `check` (two uints), keeps the first failure's id and value.
// Include after the declaration of `check`.
#ifndef OA_DEVICE_CHECK_GLSL
#define OA_DEVICE_CHECK_GLSL

void oa_fail_check(uint id, int value) {
  if (atomicCompSwap(check[0], 0u, id) == 0u) check[1] = uint(value);
}

#endif
