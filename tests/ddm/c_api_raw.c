/* The C API's enum parameters as a C caller may pass them: C enums are ints, any int included. C++
 * may not form such a value (loading an enum object outside its range is undefined behaviour,
 * clang's UBSan `enum` check), so c_api_test.cpp makes its out-of-range calls through these. */
#include "simkit/ddm/c_api.h"

simkit_ddm_status c_api_raw_set_rule(simkit_ddm_matcher* matcher, int rule) {
  return simkit_ddm_set_rule(matcher, (simkit_ddm_rule)rule);
}
simkit_ddm_status c_api_raw_set_backend(simkit_ddm_matcher* matcher, int backend) {
  return simkit_ddm_set_backend(matcher, (simkit_ddm_backend)backend);
}
simkit_ddm_status c_api_raw_set_algorithm(simkit_ddm_matcher* matcher, int algorithm) {
  return simkit_ddm_set_algorithm(matcher, (simkit_ddm_algorithm)algorithm);
}
const char* c_api_raw_status_name(int status) { return simkit_ddm_status_name((simkit_ddm_status)status); }
