import torch

import softnorm

logits = torch.randn(4096, 8192, device="cuda") * 4
probabilities = softnorm.row_softmax(logits)
torch.cuda.synchronize()
print(probabilities.sum(dim=1)[:4])
