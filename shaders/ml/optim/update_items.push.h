// The items of one multi-tensor optimizer update (adamw_step.comp,
// sgd_step.comp): up to OA_OPTIM_ITEMS element ranges of parameters, each
// with bindings of its own. Item j has n[j] elements (0: unused) and takes
// ceil(n[j] / 1024) consecutive workgroups after those of items 0 .. j-1;
// slot[j] is its parameter's index in the optimizer (which picks its step
// constants and update count from the buffers).
#ifndef OA_ML_OPTIM_UPDATE_ITEMS_PUSH_H
#define OA_ML_OPTIM_UPDATE_ITEMS_PUSH_H
#define OA_OPTIM_ITEMS 8
#define OA_PART_FIELDS_ml_optim_update_items \
  OA_ARRAY(uint, n, OA_OPTIM_ITEMS)          \
  OA_ARRAY(uint, slot, OA_OPTIM_ITEMS)
OA_PUSH_PART(ml_optim_update_items)
#endif
