#pragma once
// The parameters of Anderson & Chaplain's model (docs/angio.md, "Model"), shared by the continuous
// solver and the hybrid model. Plain data: the formulas that use them are private (model.hpp).

namespace simkit::angio {

// The chemotactic sensitivity chi(c): `Receptor` is A&C's receptor-kinetic law chi0 / (1 + alpha c);
// `Constant` is chi0 (Angio_TDA, Nardini et al. 2021), i.e. the same formulas with alpha = 0.
enum class Sensitivity : unsigned char { Receptor, Constant };

struct ModelParams {
  double diffusion = 0.00035;     // D
  double chemotaxis = 0.38;       // chi0, chi(c) = chi0 / (1 + alpha c)
  double chemo_saturation = 0.6;  // alpha (unused with Sensitivity::Constant)
  double haptotaxis = 0.34;       // rho
  double fn_production = 0.05;    // beta
  double fn_uptake = 0.1;         // gamma
  double taf_uptake = 0.1;        // eta
  double taf_diffusion = 0.0;     // D_c
  Sensitivity sensitivity = Sensitivity::Receptor;
};

// The numeric parameters, one row each: the name in run.json and result.json, the symbol of the
// papers (the key in a config file's [parameters] table) and the member. Every reader, writer and
// check of ModelParams goes through this table (docs/angio.md, "Configuration file").
// (A member-pointer alias: nvcc's front end rewrites `double ModelParams::*member` with parentheses
// that g++ then warns about.)
using ModelParamMember = double ModelParams::*;
struct ModelParamField {
  const char* name;
  const char* symbol;
  ModelParamMember member;
};
inline constexpr ModelParamField kModelParamFields[] = {
    {"diffusion", "D", &ModelParams::diffusion},
    {"chemotaxis", "chi0", &ModelParams::chemotaxis},
    {"chemo_saturation", "alpha", &ModelParams::chemo_saturation},
    {"haptotaxis", "rho", &ModelParams::haptotaxis},
    {"fn_production", "beta", &ModelParams::fn_production},
    {"fn_uptake", "gamma", &ModelParams::fn_uptake},
    {"taf_uptake", "eta", &ModelParams::taf_uptake},
    {"taf_diffusion", "D_c", &ModelParams::taf_diffusion},
};

}  // namespace simkit::angio
