/* The legacy routines, unchanged by the port: plain C on raw pointers. */
#include "legacy.h"

void deposit(const float* part, float* q, float qm, int nop, int idimp, int nx) {
  for (int j = 0; j < nop; ++j) {
    const float x = part[idimp * j];
    const int n = (int)x;
    const float dx = x - (float)n;
    q[n] += qm * (1.0f - dx);
    q[(n + 1) % nx] += qm * dx;
  }
}

void push(float* part, const float* fx, float qbm, float dt, float* ek, int nop, int idimp,
          int nx) {
  double sum = 0.0;
  const float length = (float)nx;
  for (int j = 0; j < nop; ++j) {
    float x = part[idimp * j];
    const int n = (int)x;
    const float dx = x - (float)n;
    const float e = (1.0f - dx) * fx[n] + dx * fx[(n + 1) % nx];
    const float v = part[idimp * j + 1];
    const float v_new = v + qbm * dt * e;
    sum += 0.25 * (double)((v + v_new) * (v + v_new));
    x += v_new * dt;
    if (x < 0.0f) x += length;
    if (x >= length) x -= length;
    part[idimp * j] = x;
    part[idimp * j + 1] = v_new;
  }
  ek[0] += (float)(0.5 * sum);
}
