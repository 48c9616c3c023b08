/* Compiled three ways by ../../tools/mkmoved.sh (see ../../README.md): MOVED puts a function
 * and its data in front of spread_on_grid, OFFSET is an immediate of its code. */
#if MOVED
float filler_data[4096] = {1.0f};
float filler(const float* x, int n)
{
    float s = 0;
    for (int i = 0; i < n; ++i)
        s += x[i] * filler_data[i & 4095];
    return s;
}
#endif
static const float weights[8] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f};
float table[1024];
int spread_on_grid(const int* a, float* out, int n)
{
    int s = 0;
    for (int i = 0; i < n; ++i)
    {
        s += a[i] + OFFSET;
        out[i] = table[a[i] & 1023] * weights[i & 7];
    }
    return s;
}
