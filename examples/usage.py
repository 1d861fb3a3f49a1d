# The usage example of the project README, exactly as written there.
import torch

if not torch.accinte.is_available():
    print("AccInte backend is not available in this build.")
    exit()

print("AccInte backend is available!")

device = torch.device("accinte")

x = torch.tensor([[1., 2.], [3., 4.]], device=device)
y = x + 2
print("Result y:\n", y)
print(f"Device of y: {y.device}")

z = y.cpu()
print("Result z:\n", z)
print(f"Device of z: {z.device}")
