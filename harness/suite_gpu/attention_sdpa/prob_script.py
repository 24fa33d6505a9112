import torch

import tinylm

model = tinylm.build_model(seed=0, device="cuda")
prompts = torch.randint(0, 8192, (8, 1024), device="cuda")
logits = model.next_token_logits(prompts)
torch.cuda.synchronize()
print(logits.shape, logits.argmax(dim=-1))
