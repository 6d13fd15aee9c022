#pragma once
// f64 oracles for the optimizers (torch.optim.SGD, torch.optim.AdamW),
// written from their documented updates.
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

// torch.optim.AdamW in f64.
struct AdamWReference {
  oa::ml::optim::AdamWOptions o;
  std::vector<double> m, v;
  int t = 0;
  void step(std::vector<double>& p, const std::vector<double>& g, double lr) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    const double b1 = o.beta1, b2 = o.beta2;
    for (std::size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1.0 - lr * double(o.weight_decay);
      m[i] = b1 * m[i] + (1.0 - b1) * g[i];
      v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
      const double mhat = m[i] / (1.0 - std::pow(b1, t));
      const double vhat = v[i] / (1.0 - std::pow(b2, t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + double(o.eps));
    }
  }
};

}  // namespace oa::reference
