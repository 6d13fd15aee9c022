#pragma once
// f64 oracles for the optimizers (torch.optim.SGD, Adam and AdamW),
// written from their documented updates.
#include <algorithm>
#include <cmath>
#include <vector>

#include "oa/ml/optim.hpp"

namespace oa::reference {

// torch.optim.SGD in f64, written from its documented update.
struct SgdReference {
  oa::ml::optim::SgdOptions o;
  std::vector<double> buf;
  bool first = true;
  void step(std::vector<double>& p, const std::vector<double>& g, double lr) {
    if (buf.empty()) buf.assign(p.size(), 0.0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + double(o.weight_decay) * p[i];
      if (o.momentum != 0) {
        buf[i] = first ? d : double(o.momentum) * buf[i] + (1.0 - double(o.dampening)) * d;
        d = o.nesterov ? d + double(o.momentum) * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
    first = false;
  }
};

// torch.optim.Adam (Decoupled false: L2 decay in the gradient) or AdamW
// (Decoupled true) in f64, amsgrad as the options say.
template <class Options, bool Decoupled>
struct AdamFamilyReference {
  Options o;
  std::vector<double> m, v, vmax;
  int t = 0;
  void step(std::vector<double>& p, const std::vector<double>& g, double lr) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0), vmax.assign(p.size(), 0.0);
    ++t;
    const double b1 = o.beta1, b2 = o.beta2, wd = o.weight_decay;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double d = Decoupled ? g[i] : g[i] + wd * p[i];
      if (Decoupled) p[i] *= 1.0 - lr * wd;
      m[i] = b1 * m[i] + (1.0 - b1) * d;
      v[i] = b2 * v[i] + (1.0 - b2) * d * d;
      vmax[i] = std::max(vmax[i], v[i]);
      const double mhat = m[i] / (1.0 - std::pow(b1, t));
      const double vhat = (o.amsgrad ? vmax[i] : v[i]) / (1.0 - std::pow(b2, t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + double(o.eps));
    }
  }
};
using AdamReference = AdamFamilyReference<oa::ml::optim::AdamOptions, false>;
using AdamWReference = AdamFamilyReference<oa::ml::optim::AdamWOptions, true>;

}  // namespace oa::reference
