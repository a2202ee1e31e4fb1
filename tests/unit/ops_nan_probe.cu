// ops_nan_probe.cu — prints what the GPU does with NaN (and a few rounding edges) in f32 -> f16/bf16,
// f16/bf16 -> f32 and f32/f64 arithmetic: the facts kernels/types.c and kernels/expr.c reproduce.
// On sm_90 (H100, driver 580): every NaN -> f16/bf16 is 0x7fff; f16 NaN -> f32 is 0x7fffffff;
// bf16 -> f32 keeps the payload; f32 arithmetic (and even fabsf/negation) returns 0x7fffffff for a
// NaN; f64 keeps payloads and makes 0xfff8000000000000 for inf-inf (hence the explicit canonical NaN
// in wp_ops.cuh). Run: nvcc -std=c++17 -arch=sm_90 tests/unit/ops_nan_probe.cu -o /tmp/probe && /tmp/probe
#include <cstdio>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
__global__ void k(const unsigned *f32in, int nf, const unsigned short *h16in, int nh, unsigned *out) {
    if (threadIdx.x) return;
    int o = 0;
    for (int i = 0; i < nf; i++) {
        float f = __uint_as_float(f32in[i]);
        __half h = __float2half_rn(f);
        __nv_bfloat16 bh = __float2bfloat16_rn(f);
        out[o++] = __half_as_ushort(h);
        out[o++] = __bfloat16_as_ushort(bh);
        out[o++] = __float_as_uint(__fadd_rn(f, 1.0f));
        out[o++] = __float_as_uint(__fadd_rn(1.0f, f));
        out[o++] = __float_as_uint(__fmul_rn(f, 2.0f));
        out[o++] = __float_as_uint(__fdiv_rn(f, 2.0f));
        out[o++] = __float_as_uint(f + 1.0f);
        out[o++] = __float_as_uint(fabsf(f));
        out[o++] = __float_as_uint(-f);
        double d = (double)f;
        unsigned long long db = __double_as_longlong(d);
        out[o++] = (unsigned)(db >> 32);
        out[o++] = (unsigned)db;
        unsigned long long r = __double_as_longlong(__dadd_rn(d, 1.0));
        out[o++] = (unsigned)(r >> 32);
        out[o++] = (unsigned)r;
    }
    for (int i = 0; i < nh; i++) {
        __half h = __ushort_as_half(h16in[i]);
        out[o++] = __float_as_uint(__half2float(h));
        out[o++] = __float_as_uint(__bfloat162float(__ushort_as_bfloat16(h16in[i])));
    }
    float inf = __int_as_float(0x7f800000), z = 0.0f;
    volatile float vinf = inf, vz = z;
    out[o++] = __float_as_uint(__fsub_rn(vinf, vinf));
    out[o++] = __float_as_uint(__fmul_rn(vz, vinf));
    out[o++] = __float_as_uint(__fdiv_rn(vz, vz));
    double dinf = (double)vinf, dz = (double)vz;
    unsigned long long r = __double_as_longlong(__dsub_rn(dinf, dinf));
    out[o++] = (unsigned)(r >> 32);
    out[o++] = (unsigned)r;
    r = __double_as_longlong(__ddiv_rn(dz, dz));
    out[o++] = (unsigned)(r >> 32);
    out[o++] = (unsigned)r;
    // f64 nan payload through add
    unsigned long long nanbits = 0x7ff0000000000123ull;
    r = __double_as_longlong(__dadd_rn(__longlong_as_double(nanbits), 1.0));
    out[o++] = (unsigned)(r >> 32);
    out[o++] = (unsigned)r;
    nanbits = 0xfff8000000000123ull;
    r = __double_as_longlong(__dmul_rn(__longlong_as_double(nanbits), 1.0));
    out[o++] = (unsigned)(r >> 32);
    out[o++] = (unsigned)r;
    out[o++] = 0xdeadbeef;
}
int main() {
    unsigned f[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu, 0xff812345u, 0x7fffffffu,
                    0x7f800000u, 0x3f800000u, 0x33000000u, 0x33000001u, 0x387fe000u, 0x477ff000u};
    unsigned short h[] = {0x7e00, 0xfe00, 0x7c01, 0x7fff, 0xfd55, 0x7fc0, 0xff81, 0x7f81, 0x0001, 0x8001};
    int nf = sizeof f / 4, nh = sizeof h / 2;
    unsigned *df, *dout;
    unsigned short *dh;
    cudaMalloc(&df, sizeof f);
    cudaMalloc(&dh, sizeof h);
    cudaMalloc(&dout, 4096 * 4);
    cudaMemcpy(df, f, sizeof f, cudaMemcpyHostToDevice);
    cudaMemcpy(dh, h, sizeof h, cudaMemcpyHostToDevice);
    k<<<1, 32>>>(df, nf, dh, nh, dout);
    unsigned out[4096];
    cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost);
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
    int o = 0;
    for (int i = 0; i < nf; i++, o += 13)
        printf("f32 %08x: f16 %04x bf16 %04x | add %08x add' %08x mul %08x div %08x plus %08x fabs %08x neg %08x | f64 "
               "%08x%08x dadd %08x%08x\n",
               f[i], out[o], out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6], out[o + 7],
               out[o + 8], out[o + 9], out[o + 10], out[o + 11], out[o + 12]);
    for (int i = 0; i < nh; i++, o += 2) printf("16 %04x: f16->f32 %08x bf16->f32 %08x\n", h[i], out[o], out[o + 1]);
    printf(
        "inf-inf %08x 0*inf %08x 0/0 %08x dinf-dinf %08x%08x d0/0 %08x%08x dnan+1 %08x%08x dnan*1 %08x%08x end %08x\n",
        out[o], out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6], out[o + 7], out[o + 8],
        out[o + 9], out[o + 10], out[o + 11]);
}
