// The item (update_items.push.h) that workgroup `group` of a multi-tensor
// optimizer update serves, and in `local` the workgroup's index within it.
// A scan over at most OA_OPTIM_ITEMS counts, uniform across the workgroup.
// Include after the push-constant block.
#ifndef OA_ML_OPTIM_UPDATE_ITEMS_GLSL
#define OA_ML_OPTIM_UPDATE_ITEMS_GLSL

uint update_item(uint group, out uint local) {
  uint first = 0u;
  uint j = 0u;
  for (; j + 1u < OA_OPTIM_ITEMS; ++j) {
    uint groups = (pc.n[j] + 1023u) / 1024u;
    if (group < first + groups) break;
    first += groups;
  }
  local = group - first;
  return j;
}

#endif
