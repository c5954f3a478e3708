/* The legacy code's routines, as its C callers declare them.  part holds idimp floats a particle
   (position, velocity); q and fx are periodic grids of nx points. */
#ifndef LEGACY_H
#define LEGACY_H
#ifdef __cplusplus
extern "C" {
#endif

/* Linear-weighting charge deposit: adds qm a particle to q. */
void deposit(const float* part, float* q, float qm, int nop, int idimp, int nx);
/* Leapfrog push in the field fx (linear interpolation); adds the time-centred kinetic energy to
   ek[0]. */
void push(float* part, const float* fx, float qbm, float dt, float* ek, int nop, int idimp, int nx);

#ifdef __cplusplus
}
#endif
#endif
