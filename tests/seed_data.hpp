// The inputs and documented outputs of the seeds' examples, as listed there.
#pragma once

#include <vector>

namespace lngrad::testdata {

struct Seed002 {
  std::vector<float> dy, x, mean, variance, gamma, pd_x, res_for_gamma;
};

struct Seed001 {
  std::vector<float> dy, res_for_gamma, pd_gamma, pd_beta;
};

inline std::vector<float> iota64() {
  std::vector<float> v(64);
  for (int i = 0; i < 64; ++i) v[i] = static_cast<float>(i);
  return v;
}

inline const Seed002& seed002() {
  static const Seed002 s = [] {
    Seed002 d;
    d.dy = iota64();
    d.x = iota64();
    d.mean = {3.5f, 11.5f, 19.5f, 27.5f, 35.5f, 43.5f, 51.5f, 59.5f};
    d.variance.assign(8, 5.25f);
    d.gamma = {0, 1, 2, 3, 4, 5, 6, 7};
    d.pd_x = {3.0548172f,  0.4362857f,  -1.3093826f, -2.182187f,  -2.1821284f, -1.309207f,  0.4365778f,
              3.0552254f,  3.0545845f,  0.4361186f,  -1.3094826f, -2.1822214f, -2.1820965f, -1.3091087f,
              0.4367447f,  3.055458f,   3.0543518f,  0.4359522f,  -1.3095818f, -2.1822548f, -2.182064f,
              -1.3090096f, 0.43690872f, 3.055687f,   3.054119f,   0.43578815f, -1.309679f,  -2.1822853f,
              -2.182026f,  -1.3089066f, 0.437088f,   3.0559235f,  3.0538864f,  0.43562222f, -1.3097801f,
              -2.1823158f, -2.1819916f, -1.3088074f, 0.43724823f, 3.05616f,    3.0536423f,  0.4354477f,
              -1.3098869f, -2.1823578f, -2.181961f,  -1.3087158f, 0.43740845f, 3.0563965f,  3.0534134f,
              0.43528175f, -1.3099861f, -2.1823883f, -2.1819305f, -1.308609f,  0.43756104f, 3.0566254f,
              3.0531921f,  0.43511963f, -1.3100777f, -2.1824188f, -2.1818848f, -1.3085022f, 0.43774414f,
              3.0568542f};
    const float row[8] = {-1.5275106f, -1.091079f, -0.6546474f, -0.21821581f,
                          0.21821581f, 0.6546474f, 1.091079f,   1.5275106f};
    for (int r = 0; r < 8; ++r) d.res_for_gamma.insert(d.res_for_gamma.end(), row, row + 8);
    return d;
  }();
  return s;
}

inline const Seed001& seed001() {
  static const Seed001 s = [] {
    Seed001 d;
    d.dy = iota64();
    d.res_for_gamma = iota64();
    d.pd_gamma = {8960, 9416, 9888, 10376, 10880, 11400, 11936, 12488};
    d.pd_beta = {224, 232, 240, 248, 256, 264, 272, 280};
    return d;
  }();
  return s;
}

}  // namespace lngrad::testdata
