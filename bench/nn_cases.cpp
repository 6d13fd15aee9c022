// Training-loop sweeps: layer norm over transformer activations, cross
// entropy over LM vocabularies and ImageNet classes, and the AdamW step over
// the parameter lists of real models (many small tensors or a few big ones),
// and the recurrent layers (LSTM, GRU) over language-model sequences.
#include "bench.hpp"

#include "oa/ml/nn/rnn.hpp"

namespace {
using oa::Matrix;
using oa_bench::Case;

struct Norm {
  const char* model;
  std::int64_t rows, d;
};

const oa_bench::Register kLayerNormSweep{[](bool quick) {
  // clang-format off
  const Norm shapes[] = {
      {"swin_t_stage1_b32_d96",   32 * 3136,   96},
      {"bert_base_b32x512_d768",  32 * 512,   768},
      {"gpt2_b8x1024_d768",        8 * 1024,  768},
      {"vit_b16_b64x197_d768",    64 * 197,   768},
      {"gpt2_xl_b4x1024_d1600",    4 * 1024, 1600},
      {"gptj6b_b2x2048_d4096",     2 * 2048, 4096},
      {"opt66b_s2048_d9216",           2048,  9216},
      {"gpt3_175b_s2048_d12288",       2048, 12288},
  };
  // clang-format on
  std::vector<Case> cases;
  for (Norm n : shapes) {
    if (quick) {
      n.rows = std::max<std::int64_t>(n.rows / 1024, 4);
      n.d = std::max<std::int64_t>(n.d / 16, 8);
    }
    for (const bool bwd : {false, true}) {
      cases.push_back({fmt::format("layer_norm_{}{}", n.model, oa_bench::suffix(bwd)), "layer_norm", "layer_norm",
                       {{"rows", n.rows}, {"d", n.d}, {"backward", bwd}}, 0, 4.0 * n.rows * n.d * (bwd ? 5 : 2),
                       [n, bwd](const oa::Engine& e) {
                         auto x = oa_bench::input({n.rows, n.d}, 1, e, bwd), w = oa_bench::input({n.d}, 2, e, bwd),
                              b = oa_bench::input({n.d}, 3, e, bwd);
                         return oa_bench::step([=] { return oa::ml::layer_norm(x, w, b); }, bwd, e);
                       }});
    }
  }
  return cases;
}};

struct Logits {
  const char* model;
  std::int64_t n, classes;
};

// Mean cross entropy of logits [N, C] against i32 targets.
const oa_bench::Register kCrossEntropySweep{[](bool quick) {
  // clang-format off
  const Logits shapes[] = {
      {"resnet_cifar10_b512",        512,     10},
      {"resnet50_imagenet_b256",     256,   1000},
      {"oa_text_bytes_b64x128",     8192,    256},
      {"bert_mlm_b32x512_masked",   2560,  30522},
      {"gpt2_s2048",                2048,  50257},
      {"llama2_s4096",              4096,  32000},
      {"llama3_s1024",              1024, 128256},
      {"gemma_s512",                 512, 256000},
  };
  // clang-format on
  std::vector<Case> cases;
  for (Logits l : shapes) {
    if (quick) {
      l.n = std::max<std::int64_t>(l.n / 64, 4);
      l.classes = std::max<std::int64_t>(l.classes / 64, 8);
    }
    for (const bool bwd : {false, true}) {
      cases.push_back({fmt::format("cross_entropy_{}{}", l.model, oa_bench::suffix(bwd)), "cross_entropy", "cross_entropy",
                       {{"n", l.n}, {"classes", l.classes}, {"backward", bwd}}, 0, 4.0 * l.n * l.classes * (bwd ? 3 : 1),
                       [l, bwd](const oa::Engine& e) {
                         auto logits = oa_bench::input({l.n, l.classes}, 1, e, bwd);
                         std::vector<std::int32_t> t(static_cast<std::size_t>(l.n));
                         std::uint64_t s = 12345;  // a fixed linear congruential sequence of classes
                         for (auto& v : t) {
                           s = s * 6364136223846793005ull + 1442695040888963407ull;
                           v = static_cast<std::int32_t>((s >> 33) % static_cast<std::uint64_t>(l.classes));
                         }
                         auto targets = Matrix::from_i32({l.n}, t, e);
                         return oa_bench::step([=] { return oa::ml::cross_entropy(logits, targets); }, bwd, e);
                       }});
    }
  }
  return cases;
}};

using Shapes = std::vector<std::vector<std::int64_t>>;

Shapes resnet50() {
  Shapes s = {{64, 3, 7, 7}, {64}, {64}};
  std::int64_t in = 64;
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t w = 64 << stage, out = 4 * w;
    for (int b = 0; b < blocks[stage]; ++b) {
      for (auto conv : Shapes{{w, in, 1, 1}, {w, w, 3, 3}, {out, w, 1, 1}}) {
        s.push_back(conv);
        s.push_back({conv[0]});
        s.push_back({conv[0]});
      }
      if (b == 0) {
        s.push_back({out, in, 1, 1});
        s.push_back({out});
        s.push_back({out});
      }
      in = out;
    }
  }
  s.push_back({1000, 2048});
  s.push_back({1000});
  return s;
}

// A GPT-style decoder: token and position embeddings, `layers` blocks of
// (layer norm, fused qkv, output projection, layer norm, MLP up and down with
// biases), a final layer norm.
Shapes gpt(std::int64_t vocab, std::int64_t context, std::int64_t d, std::int64_t layers) {
  Shapes s = {{vocab, d}, {context, d}};
  for (std::int64_t l = 0; l < layers; ++l)
    for (auto t : Shapes{{d}, {d}, {3 * d, d}, {3 * d}, {d, d}, {d}, {d}, {d}, {4 * d, d}, {4 * d}, {d, 4 * d}, {d}}) s.push_back(t);
  s.push_back({d});
  s.push_back({d});
  return s;
}

// ViT-B/16: patch embedding, class token, positions, 12 pre-norm blocks, head.
Shapes vit_b16() {
  Shapes s = {{768, 3, 16, 16}, {768}, {1, 768}, {197, 768}};
  const Shapes block = gpt(1, 1, 768, 1);
  for (int l = 0; l < 12; ++l) s.insert(s.end(), block.begin() + 2, block.end() - 2);
  for (auto t : Shapes{{768}, {768}, {1000, 768}, {1000}}) s.push_back(t);
  return s;
}

// BERT-base: word, position and type embeddings with their layer norm, 12
// post-norm blocks (q, k, v, o with biases, layer norm, MLP, layer norm), pooler.
Shapes bert_base() {
  Shapes s = {{30522, 768}, {512, 768}, {2, 768}, {768}, {768}};
  for (int l = 0; l < 12; ++l)
    for (auto t : Shapes{{768, 768}, {768}, {768, 768}, {768}, {768, 768}, {768}, {768, 768}, {768}, {768}, {768},
                         {3072, 768}, {3072}, {768, 3072}, {768}, {768}, {768}})
      s.push_back(t);
  s.push_back({768, 768});
  s.push_back({768});
  return s;
}

// The DCGAN generator: five transposed convolutions (IOHW), batch norm after four.
Shapes dcgan_generator() {
  return {{100, 512, 4, 4}, {512}, {512}, {512, 256, 4, 4}, {256}, {256}, {256, 128, 4, 4}, {128}, {128},
          {128, 64, 4, 4},  {64},  {64},  {64, 3, 4, 4}};
}

// One LLaMA-7B decoder layer (attention q, k, v, o; SwiGLU gate, up, down; two RMSNorm weights).
Shapes llama7b_layer() {
  return {{4096, 4096}, {4096, 4096}, {4096, 4096}, {4096, 4096}, {11008, 4096}, {11008, 4096}, {4096, 11008}, {4096}, {4096}};
}

const oa_bench::Register kAdamWSweep{[](bool quick) {
  const std::pair<const char*, Shapes> models[] = {
      {"resnet50", resnet50()},
      {"vit_b16", vit_b16()},
      {"bert_base", bert_base()},
      {"dcgan_generator", dcgan_generator()},
      {"gpt2_small", gpt(50257, 1024, 768, 12)},
      {"oa_text_default", gpt(256, 128, 256, 4)},
      {"llama7b_layer", llama7b_layer()},
      {"llama7b_embedding", {{32000, 4096}}},
  };
  std::vector<Case> cases;
  for (auto [model, shapes] : models) {
    double count = 0;
    nlohmann::json js = nlohmann::json::array();
    for (auto& shape : shapes) {
      if (quick)
        for (auto& x : shape) x = std::max<std::int64_t>(x / 8, 1);
      js.push_back(shape);
      count += double(oa::Shape(shape).numel());
    }
    // Per parameter element: read p, g, m, v; write p, m, v.
    cases.push_back({fmt::format("adamw_{}", model), "adamw", "adamw", {{"shapes", js}, {"parameters", count}}, 0, 28 * count,
                     [shapes = shapes](const oa::Engine& e) {
                       std::vector<oa::ml::Parameter> params;
                       for (std::size_t i = 0; i < shapes.size(); ++i) {
                         params.emplace_back(fmt::format("p{}", i), Matrix::uniform(oa::Shape(shapes[i]), -1, 1, i + 1, e));
                         oa::backward(params.back().value() * 1.0f, oa_bench::input(oa::Shape(shapes[i]), 1000 + i, e));
                       }
                       auto opt = std::make_shared<oa::ml::optim::AdamW>(params);
                       return std::function<void()>([opt] { opt->step(); });
                     }});
  }
  return cases;
}};

struct Recurrent {
  const char* model;
  bool lstm;
  std::int64_t layers, batch, steps, input, hidden;
};

// nn::LSTM / nn::GRU over x [T, B, I] (time-major), forward or forward + backward.
const oa_bench::Register kRecurrentSweep{[](bool quick) {
  // clang-format off
  const Recurrent shapes[] = {
      {"l2_b32_t64_h256",            true,  2, 32,  64,  256,  256},
      {"ptb_medium_l2_b20_t35_h650", true,  2, 20,  35,  650,  650},   // Zaremba et al. 2014, medium
      {"ptb_large_l2_b20_t35_h1500", true,  2, 20,  35, 1500, 1500},   // Zaremba et al. 2014, large
      {"l1_b64_t100_i128_h512",      false, 1, 64, 100,  128,  512},
      {"l2_b16_t256_h1024",          false, 2, 16, 256, 1024, 1024},
  };
  // clang-format on
  std::vector<Case> cases;
  for (Recurrent r : shapes) {
    if (quick) {
      r.batch = std::min<std::int64_t>(r.batch, 4);
      r.steps = std::min<std::int64_t>(r.steps, 8);
      r.input = std::max<std::int64_t>(r.input / 32, 4);
      r.hidden = std::max<std::int64_t>(r.hidden / 32, 4);
    }
    for (const bool bwd : {false, true}) {
      const std::int64_t g = r.lstm ? 4 : 3;
      // The GEMMs: per layer and step the input and recurrent projections (three times that with the backward).
      const double flops = 2.0 * r.steps * r.batch * g * r.hidden * (r.input + r.hidden + (r.layers - 1) * 2.0 * r.hidden) * (bwd ? 3 : 1);
      cases.push_back({fmt::format("{}_{}{}", r.lstm ? "lstm" : "gru", r.model, oa_bench::suffix(bwd)), "rnn", r.lstm ? "lstm" : "gru",
                       {{"layers", r.layers}, {"batch", r.batch}, {"steps", r.steps}, {"input", r.input}, {"hidden", r.hidden},
                        {"backward", bwd}},
                       flops, 0,
                       [r, bwd](const oa::Engine& e) {
                         oa::ml::Generator gen(1);
                         std::shared_ptr<oa::ml::nn::Module> m;
                         const oa::ml::nn::RNNOptions o{.num_layers = r.layers};
                         if (r.lstm) m = std::make_shared<oa::ml::nn::LSTM>(r.input, r.hidden, gen, o, e);
                         else m = std::make_shared<oa::ml::nn::GRU>(r.input, r.hidden, gen, o, e);
                         auto x = oa_bench::input({r.steps, r.batch, r.input}, 1, e, bwd);
                         return oa_bench::step([m, x] { return m->forward(x); }, bwd, e);
                       }});
    }
  }
  return cases;
}};

}  // namespace
