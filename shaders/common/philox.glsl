#ifndef OA_PHILOX_GLSL
#define OA_PHILOX_GLSL
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11): a counter-based generator. oa's streams use element i's counter
// (i / 4, 0, 0, 0) under the 64-bit seed as key and take lane i % 4, so a value
// depends only on (seed, i), never on the device or the launch shape.
uvec4 oa_philox(uvec4 c, uvec2 k) {
  for (int r = 0; r < 10; ++r) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

// The top 24 bits of a word as a float on [0, 1).
float oa_unit_float(uint v) { return float(v >> 8) * (1.0 / 16777216.0); }
#endif
